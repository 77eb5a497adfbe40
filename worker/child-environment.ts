/**
 * The environment of a program ebsync starts (the Temporal dev server, initdb and postgres):
 * what a program needs to run (its search path, home, temp directory, locale and time zone)
 * and nothing else. ebsync's own settings hold its secrets (EBSYNC_ENCRYPTION_KEYS,
 * EBS_API_KEY, TEMPORAL_API_KEY, CRM tokens, EBSYNC_ADMIN_TOKEN...), and a child that inherited
 * them could leak them in a crash report, a debug page or a child of its own.
 */
const ALLOWED = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'TMPDIR',
  'TMP',
  'TEMP',
  'TZ',
  'LANG',
  'LANGUAGE',
  'SYSTEMROOT',
  'XDG_CONFIG_HOME',
  'XDG_CACHE_HOME',
]);

export function childEnvironment(
  overrides: Readonly<Record<string, string>> = {},
  from: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(from)) {
    if (value !== undefined && (ALLOWED.has(name) || name.startsWith('LC_'))) env[name] = value;
  }
  return { ...env, ...overrides };
}
