/**
 * A setting given as JSON text (an environment variable) or as the value itself (a config
 * file): the value, or undefined when the text is not JSON.
 */
export function jsonSettingValue(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return undefined;
  }
}
