import { SETTINGS } from './settings.js';

/**
 * Variables of ebsync's prefixes that are no setting but that ebsync or its own tooling reads:
 * stack traces on errors, the launcher's mark on the process it starts, and the test suite's
 * import log and spec path.
 */
const READ_ELSEWHERE = new Set([
  'EBSYNC_DEBUG',
  'EBSYNC_NODE_REEXEC',
  'EBSYNC_IMPORTS_FILE',
  'EBSYNC_SPEC_FILE',
]);

const PREFIXES = ['EBSYNC_', 'EBS_'];

/** Levenshtein distance, stopped early once past `most`. */
function distance(a: string, b: string, most: number): number {
  if (Math.abs(a.length - b.length) > most) return most + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const value = Math.min(
        (previous[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + cost,
      );
      row.push(value);
      best = Math.min(best, value);
    }
    if (best > most) return most + 1;
    previous = row;
  }
  return previous[b.length] ?? most + 1;
}

export interface UnknownSetting {
  name: string;
  /** The setting it most likely meant (a few letters off), if any. */
  suggestion?: string;
}

/**
 * Environment variables named like ebsync's (EBSYNC_…, and EBS_… a letter or two from a
 * setting) that are no setting: a
 * misspelled one (EBSYNC_HUBSPOT_MAPPNG) is otherwise ignored without a word, and the
 * command runs on the default it meant to change. Their values are never looked at.
 */
export function unknownSettings(env: NodeJS.ProcessEnv): UnknownSetting[] {
  const known = new Set(SETTINGS.map((s) => s.env));
  const unknown: UnknownSetting[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!PREFIXES.some((p) => name.startsWith(p))) continue;
    if (known.has(name) || READ_ELSEWHERE.has(name)) continue;
    let suggestion: string | undefined;
    let closest = 3;
    for (const setting of known) {
      const d = distance(name, setting, closest);
      if (d < closest) {
        closest = d;
        suggestion = setting;
      }
    }
    // EBS_ is a short prefix that other tools' variables may share: one of those is named only
    // when it is a setting misspelled.
    if (suggestion) unknown.push({ name, suggestion });
    else if (name.startsWith('EBSYNC_')) unknown.push({ name });
  }
  return unknown;
}
