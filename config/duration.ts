const UNITS_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Parses `250ms`, `30s`, `2m`, `1h` or a bare number of milliseconds; undefined when malformed. */
export function parseDuration(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isFinite(text) && text >= 0 ? text : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!match) return undefined;
  const unit = UNITS_MS[match[2] ?? 'ms'] ?? 1;
  return Math.round(Number(match[1]) * unit);
}

/** A duration in its largest whole unit, as the flags take it: `0s`, `500ms`, `30s`, `5m`, `24h`. */
export function durationText(ms: number): string {
  if (ms === 0) return '0s';
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
