import { withRouteOverrides } from '../api/routes.js';
import { ConfigError, loadConfig, settingProblem, type Config } from '../config/index.js';

/**
 * The configuration a command (and the worker it starts) begins from: loadConfig checks each
 * setting's shape, then this checks what only api/'s route table can judge, since config/ may
 * not import api/: each route override (EBS_ROUTE_OVERRIDES) names a route that exists, that
 * the spec does not fix, and keeps its placeholders. A bad one stops the command at start
 * with one line and exit 2, like any bad setting, not at its first request.
 */
export function loadStartupConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const config = loadConfig(env);
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
