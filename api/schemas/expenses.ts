import { z } from 'zod';
import { itemSchema, nullableInt, nullableString } from './envelope.js';
import { idSchema, ymdSchema } from './formats.js';

/** Expense attributes: "not shown beyond" the input fields; amount may come as number or decimal string. */
export const expenseAttributesSchema = z.looseObject({
  id: z.number().int(),
  /** custom or staff; any other value is kept as a string. */
  payee_type: nullableString,
  payee_value: nullableString,
  staff_id: nullableInt,
  payment_date: nullableString,
  payment_method: nullableString,
  amount: z.union([z.number(), z.string()]).nullable().optional(),
  amount_cents: nullableInt,
  amount_currency: nullableString,
  amount_formatted: nullableString,
  ref_no: nullableString,
  description: nullableString,
  expense_category_id: nullableInt,
  event_id: nullableInt,
});
export type ExpenseAttributes = z.infer<typeof expenseAttributesSchema>;
export const expenseSchema = itemSchema(expenseAttributesSchema);
export type Expense = z.infer<typeof expenseSchema>;

export const PAYEE_TYPES = ['custom', 'staff'] as const;
export type PayeeType = (typeof PAYEE_TYPES)[number];

const expenseFields = {
  payee_type: z.enum(PAYEE_TYPES),
  payee_value: z.string().min(1).optional(),
  staff_id: idSchema.optional(),
  payment_date: ymdSchema,
  /** Free string. */
  payment_method: z.string().optional(),
  amount: z.number().finite(),
  ref_no: z.string().min(1),
  description: z.string().optional(),
  expense_category_id: idSchema.optional(),
  event_id: idSchema.optional(),
};

/** The payee the type names must be there: payee_value for custom, staff_id for staff. */
function payeeRule(
  body: {
    payee_type?: PayeeType | undefined;
    payee_value?: string | undefined;
    staff_id?: number | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  if (body.payee_type === 'custom' && body.payee_value === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['payee_value'],
      message: 'is required when payee_type is custom',
    });
  }
  if (body.payee_type === 'staff' && body.staff_id === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['staff_id'],
      message: 'is required when payee_type is staff',
    });
  }
}

export const createExpenseBodySchema = z.strictObject(expenseFields).superRefine(payeeRule);
export type CreateExpenseBody = z.input<typeof createExpenseBodySchema>;

/** Update: the same fields, all optional; a payee_type sent still needs its payee. */
export const updateExpenseBodySchema = z
  .strictObject(expenseFields)
  .partial()
  .superRefine(payeeRule);
export type UpdateExpenseBody = z.input<typeof updateExpenseBodySchema>;
