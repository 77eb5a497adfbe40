import { z } from 'zod';

/**
 * Value formats request bodies must use (strict writer). Event creation is the odd one out:
 * MM-DD-YYYY dates; everything else takes YYYY-MM-DD. Times are 12-hour with AM/PM in the
 * business's time zone.
 */
function realDate(year: number, month: number, day: number): boolean {
  const d = new Date(Date.UTC(year, month - 1, day));
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day;
}

export const ymdSchema = z.string().refine((text) => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  return m !== null && realDate(Number(m[1]), Number(m[2]), Number(m[3]));
}, 'expected a date as YYYY-MM-DD');

export const mdySchema = z.string().refine((text) => {
  const m = /^(\d{1,2})-(\d{1,2})-(\d{4})$/.exec(text);
  return m !== null && realDate(Number(m[3]), Number(m[1]), Number(m[2]));
}, 'expected a date as MM-DD-YYYY');

export const time12Schema = z
  .string()
  .regex(/^(0?[1-9]|1[0-2]):[0-5]\d\s?[AaPp][Mm]$/, 'expected a 12-hour time like 2:00 PM');

export const idSchema = z.number().int().positive();

/** Decimal amounts: a number, or a decimal string like "199.99" (never float-rounded by us). */
export const amountSchema = z.union([
  z.number().finite(),
  z.string().regex(/^-?\d+(\.\d{1,2})?$/, 'expected a decimal amount like 199.99'),
]);

/** Paging parameters of list endpoints. */
export const pagingQueryFields = {
  page: z.number().int().positive().optional(),
  per: z.number().int().positive().optional(),
};
