import { describe, expect, it } from 'vitest';
import { mdyToYmd, readMoney, toMdy, toTime12, toYmd, wallClock } from '../../api/values.js';
import { centsToDecimal, toCents } from '../../records/money.js';

describe('money', () => {
  it('reads the money quadruple, and null without the pricing permission', () => {
    expect(
      readMoney(
        {
          price: '1299.00',
          price_cents: 129_900,
          price_currency: 'USD',
          price_formatted: '$1,299.00',
        },
        'price',
      ),
    ).toEqual({ cents: 129_900, amount: '1299.00', currency: 'USD', formatted: '$1,299.00' });
    expect(
      readMoney(
        { price: null, price_cents: null, price_currency: null, price_formatted: null },
        'price',
      ),
    ).toBeNull();
    expect(readMoney({}, 'price')).toBeNull();
    expect(readMoney({ price_cents: 550 }, 'price')).toEqual({
      cents: 550,
      amount: '5.50',
      currency: 'USD',
      formatted: '5.50',
    });
  });

  it('converts decimal amounts to cents without float drift and back', () => {
    expect(toCents('19.99')).toBe(1999);
    expect(toCents('0.1')).toBe(10);
    expect(toCents(0.1 + 0.2)).toBe(30);
    expect(toCents('-4.05')).toBe(-405);
    expect(toCents(1234)).toBe(123_400);
    expect(() => toCents('12.345')).toThrow(RangeError);
    expect(() => toCents('abc')).toThrow(RangeError);
    expect(() => toCents(1e20)).toThrow(RangeError);
    // A number with a third decimal is no whole number of cents either, as its text is not;
    // float drift is no third decimal.
    expect(() => toCents(12.345)).toThrow(RangeError);
    expect(() => toCents(10_000_000.005)).toThrow(RangeError);
    expect(() => toCents(2_000_000.001)).toThrow(RangeError);
    expect(() => toCents(-0.001)).toThrow(RangeError);
    expect(() => toCents(Number.NaN)).toThrow(RangeError);
    expect(toCents(19.99)).toBe(1999);
    expect(toCents(1.005 * 1000)).toBe(100_500);
    expect(toCents(-4.05)).toBe(-405);
    expect(Object.is(toCents(-0), 0)).toBe(true);
    expect(toCents(90_071_992_547_409.91)).toBe(9_007_199_254_740_991);
    expect(centsToDecimal(1999)).toBe('19.99');
    expect(centsToDecimal(5)).toBe('0.05');
    expect(centsToDecimal(-405)).toBe('-4.05');
  });
});

describe('dates and times', () => {
  it('formats YYYY-MM-DD and MM-DD-YYYY in the business time zone', () => {
    const instant = '2031-06-21T02:30:00Z'; // still June 20 in New York
    expect(toYmd(instant, 'America/New_York')).toBe('2031-06-20');
    expect(toYmd(instant)).toBe('2031-06-21');
    expect(toMdy(instant, 'America/New_York')).toBe('06-20-2031');
    expect(toYmd('2031-02-03')).toBe('2031-02-03');
    expect(toMdy('2031-02-03')).toBe('02-03-2031');
  });

  it('formats 12-hour times with AM/PM, including noon and midnight', () => {
    expect(toTime12('2031-06-20T21:00:00Z', 'America/New_York')).toBe('5:00 PM');
    expect(toTime12('2031-06-20T16:00:00Z', 'America/New_York')).toBe('12:00 PM');
    expect(toTime12('2031-06-20T04:05:00Z', 'America/New_York')).toBe('12:05 AM');
    expect(toTime12('2031-01-15T14:30:00Z', 'UTC')).toBe('2:30 PM');
  });

  it('reads the wall clock and converts MM-DD-YYYY to ISO', () => {
    expect(wallClock('2031-12-31T23:30:00Z', 'Europe/Berlin')).toEqual({
      year: 2032,
      month: 1,
      day: 1,
      hour: 0,
      minute: 30,
    });
    expect(mdyToYmd('6-5-2031')).toBe('2031-06-05');
    expect(mdyToYmd('12-25-2031')).toBe('2031-12-25');
    expect(() => mdyToYmd('2031-12-25')).toThrow(RangeError);
    expect(() => toYmd('not a date')).toThrow(RangeError);
  });
});
