/**
 * Money as the mirror keeps it: whole cents, read from the service's decimal strings without
 * float drift. Pure: the canonical records (canonical.ts) and their tests use it.
 */

/** Whole cents from a decimal string or number, without float drift ("19.99" → 1999). */
export function toCents(value: string | number): number {
  if (typeof value === 'number') return centsOfNumber(value);
  const text = value.trim();
  const match = /^(-)?(\d+)(?:\.(\d{1,2}))?$/.exec(text);
  if (!match) throw new RangeError(`'${text}' is not a decimal amount`);
  const cents = Number(match[2]) * 100 + Number((match[3] ?? '').padEnd(2, '0'));
  // Past 2^53 a number holds no exact count of cents (1e20 dollars would be 1e22 of them):
  // no column takes it, and one such amount failed the whole mirror pass.
  if (!Number.isSafeInteger(cents)) throw new RangeError(`'${text}' is too large for whole cents`);
  return match[1] ? -cents : cents;
}

/**
 * A JSON number as cents: 0.1 + 0.2 is 30 cents (a binary float drifts by a few units of its
 * last place, about 1e-16 of itself), but 12.345 is no whole number of cents, nor is
 * 10000000.005. Rounding it to two places with toFixed made 12.35 of it, an amount the service
 * never sent. The tolerance is that drift, or a millionth of a cent for small amounts.
 */
function centsOfNumber(value: number): number {
  const scaled = value * 100;
  const cents = Math.round(scaled);
  if (!Number.isSafeInteger(cents)) throw new RangeError(`'${value}' is too large for whole cents`);
  if (Math.abs(scaled - cents) > Math.max(1e-6, 8 * Number.EPSILON * Math.abs(scaled))) {
    throw new RangeError(`'${value}' has more than two decimals`);
  }
  return cents + 0; // -0 (or a drift below zero of -0) is 0 cents
}

export function centsToDecimal(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(Math.trunc(cents));
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}
