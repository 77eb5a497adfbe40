import { spawn } from 'node:child_process';
import {
  accessSync,
  constants,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

/**
 * Finds the Temporal CLI (which carries the dev server): TEMPORAL_CLI_PATH, then PATH, then
 * our cache, then a build from its Go module into the cache. When none of those can work the
 * caller falls back to the SDK's own download, which needs internet access.
 */
export const TEMPORAL_CLI_VERSION = '1.5.1';
const GO_MODULE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`;

export type TemporalExecutable =
  { type: 'existing-path'; path: string } | { type: 'cached-download' };

/** The CLI cannot be found, built or downloaded. Not retryable without a change on the machine. */
export class TemporalCliError extends Error {
  override readonly name = 'TemporalCliError';
  readonly retryable = false;
}

export interface FindOptions {
  env?: NodeJS.ProcessEnv;
  /** Progress lines while building (first build takes minutes). */
  onProgress?: (line: string) => void;
  /** Skip the Go build (used by callers that only want to know what is there). */
  build?: boolean;
}

export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache');
  return join(base, 'ebsync', `temporal-${TEMPORAL_CLI_VERSION}`);
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export async function findTemporalCli(options: FindOptions = {}): Promise<TemporalExecutable> {
  const env = options.env ?? process.env;
  const explicit = env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!isExecutable(explicit)) {
      throw new TemporalCliError(
        `TEMPORAL_CLI_PATH='${explicit}' is not an executable file; point it at a temporal CLI binary or unset it`,
      );
    }
    return { type: 'existing-path', path: explicit };
  }
  const fromPath = onPath('temporal', env);
  if (fromPath) return { type: 'existing-path', path: fromPath };
  const cached = join(cacheDir(env), 'temporal');
  if (isExecutable(cached)) return { type: 'existing-path', path: cached };
  const go = onPath('go', env);
  if (go && options.build !== false) {
    await buildWithGo(go, cacheDir(env), env, options.onProgress ?? (() => undefined));
    return { type: 'existing-path', path: cached };
  }
  return { type: 'cached-download' };
}

/** Builds into a private folder, then renames into the cache: concurrent builds cannot clash. */
async function buildWithGo(
  go: string,
  targetDir: string,
  env: NodeJS.ProcessEnv,
  progress: (line: string) => void,
): Promise<void> {
  mkdirSync(targetDir, { recursive: true });
  const scratch = mkdtempSync(join(targetDir, '.build-'));
  const started = Date.now();
  let modules = 0;
  let tail: string[] = [];
  progress(
    `Building Temporal CLI v${TEMPORAL_CLI_VERSION} with Go into ${targetDir} (first time only; takes a few minutes)`,
  );
  const ticker = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    progress(`  …still building: ${modules} modules fetched, ${seconds}s elapsed`);
  }, 20_000);
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(go, ['install', GO_MODULE], {
        env: { ...env, GOBIN: scratch, GOFLAGS: env.GOFLAGS ?? '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const collect = (chunk: Buffer): void => {
        for (const line of chunk.toString().split('\n')) {
          if (!line.trim()) continue;
          if (line.startsWith('go: downloading')) modules += 1;
          tail = [...tail.slice(-9), line];
        }
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.on('error', reject);
      child.on('close', (code) => {
        if (code === 0) resolve();
        else
          reject(
            new TemporalCliError(
              `building the Temporal CLI with 'go install ${GO_MODULE}' failed (exit ${code}):\n${tail.join('\n')}`,
            ),
          );
      });
    });
    renameSync(join(scratch, 'temporal'), join(targetDir, 'temporal'));
    progress(`Temporal CLI built in ${Math.round((Date.now() - started) / 1000)}s`);
  } finally {
    clearInterval(ticker);
    rmSync(scratch, { recursive: true, force: true });
  }
}

export const NO_CLI_HINT =
  'no Temporal CLI could be found or built: set TEMPORAL_CLI_PATH to a temporal binary, put one on PATH, ' +
  `install Go so ebsync can build v${TEMPORAL_CLI_VERSION}, or give the machine internet access for the SDK download`;
