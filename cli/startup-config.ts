import { isAbsolute, join, relative } from 'node:path';
import { withRouteOverrides } from '../api/routes.js';
import {
  ConfigError,
  loadConfig,
  settingProblem,
  unknownSettings,
  type Config,
} from '../config/index.js';
import { shownSafely } from './shown-text.js';
import { scrubText } from '../worker/redact.js';

/**
 * The configuration a command (and the worker it starts) begins from: loadConfig checks each
 * setting's shape, then this checks what only api/'s route table can judge, since config/ may
 * not import api/: each route override (EBS_ROUTE_OVERRIDES) names a route that exists, that
 * the spec does not fix, and keeps its placeholders. A bad one stops the command at start
 * with one line and exit 2, like any bad setting, not at its first request.
 */
export function loadStartupConfig(env: NodeJS.ProcessEnv = process.env): Config {
  warnUnknownSettings(env);
  const dataDir = projectDataDir(env);
  const config = loadConfig(dataDir === undefined ? env : { ...env, EBSYNC_DATA_DIR: dataDir });
  const overrides = config.service.routeOverrides;
  if (overrides) {
    try {
      withRouteOverrides(overrides);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new ConfigError([settingProblem('service.routeOverrides', overrides, message)]);
    }
  }
  return config;
}

/**
 * EBSYNC_DATA_DIR's default, `.ebsync`, for a command run by npm in a subfolder of its project
 * (`npx ebsync status` in `docs/`): the project's `.ebsync`, where `npm start` keeps its data,
 * since npm runs scripts in the project's folder and `npx` where the shell is. It was the
 * subfolder's, so each such command made a data dir of its own there, with a key of its own
 * that opens none of `npm start`'s workflows. Undefined (the default as it is) elsewhere.
 */
function projectDataDir(env: NodeJS.ProcessEnv): string | undefined {
  const project = env.npm_config_local_prefix;
  if (env.EBSYNC_DATA_DIR !== undefined || !project || !isAbsolute(project)) return undefined;
  if (!strictlyInside(project, process.cwd())) return undefined;
  return relative(process.cwd(), join(project, '.ebsync'));
}

/** Whether `dir` is a folder under `parent` (not `parent` itself). */
export function strictlyInside(parent: string, dir: string): boolean {
  const path = relative(parent, dir);
  return path !== '' && !path.startsWith('..') && !isAbsolute(path);
}

/**
 * Where the user's shell is: npm runs a script (`npm start`) in its project's folder, from
 * whichever subfolder it was typed in (INIT_CWD); paths shown to be typed are relative to that.
 */
export function shellDir(): string {
  const cwd = process.cwd();
  const typedIn = process.env.INIT_CWD;
  return typedIn && process.env.npm_config_local_prefix === cwd && strictlyInside(cwd, typedIn)
    ? typedIn
    : cwd;
}

/** Whether this process said its unknown variables already: a command may load twice. */
let warned = false;

/**
 * One line per variable named like a setting that is none (a misspelling ignored would leave
 * the command on the default it meant to change), with the setting it likely meant; the
 * command goes on. Names only: a value may be a secret.
 */
function warnUnknownSettings(env: NodeJS.ProcessEnv): void {
  if (warned) return;
  warned = true;
  for (const { name, suggestion } of unknownSettings(env)) {
    const meant = suggestion ? ` (did you mean ${suggestion}?)` : '';
    process.stderr.write(
      `${shownSafely(scrubText(`ebsync: warning: ${name} is no ebsync setting${meant}; it is ignored (settings: README, Configuration)`))}\n`,
    );
  }
}
