/**
 * Money as the mirror keeps it: whole cents, read from the service's decimal strings without
 * float drift. Pure: the canonical records (canonical.ts) and their tests use it.
 */

/** Whole cents from a decimal string or number, without float drift ("19.99" → 1999). */
export function toCents(value: string | number): number {
  const text = typeof value === 'number' ? value.toFixed(2) : value.trim();
  const match = /^(-)?(\d+)(?:\.(\d{1,2}))?$/.exec(text);
  if (!match) throw new RangeError(`'${text}' is not a decimal amount`);
  const cents = Number(match[2]) * 100 + Number((match[3] ?? '').padEnd(2, '0'));
  // Past 2^53 a number holds no exact count of cents (1e20 dollars would be 1e22 of them):
  // no column takes it, and one such amount failed the whole mirror pass.
  if (!Number.isSafeInteger(cents)) throw new RangeError(`'${text}' is too large for whole cents`);
  return match[1] ? -cents : cents;
}

export function centsToDecimal(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(Math.trunc(cents));
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}
