const UNITS_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Parses `250ms`, `30s`, `2m`, `1h` or a bare number of milliseconds; undefined when malformed. */
export function parseDuration(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isFinite(text) && text >= 0 ? text : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!match) return undefined;
  const unit = UNITS_MS[match[2] ?? 'ms'] ?? 1;
  return Math.round(Number(match[1]) * unit);
}
