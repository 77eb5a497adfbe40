export { loadConfig, ConfigError, maskSecret, settingProblem } from './load.js';
export {
  configSchema,
  isLoopbackHost,
  PRODUCTION_HTTP,
  type Config,
  type ConfigInput,
} from './schema.js';
export { SETTINGS, type Setting } from './settings.js';
export { unknownSettings, type UnknownSetting } from './unknown-settings.js';
export { parseDuration } from './duration.js';
