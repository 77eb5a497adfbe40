import type { Transport } from '../transport.js';
import { okSchema, singleSchema } from '../schemas/envelope.js';
import {
  createExpenseBodySchema,
  expenseSchema,
  updateExpenseBodySchema,
  type CreateExpenseBody,
  type UpdateExpenseBody,
} from '../schemas/expenses.js';

const expenseSingle = singleSchema(expenseSchema);

/** Expenses: payments to a custom payee or a staff member. */
export function expensesResource(t: Transport) {
  return {
    create: (body: CreateExpenseBody) =>
      t.call('expenses.create', {
        body,
        bodySchema: createExpenseBodySchema,
        responseSchema: expenseSingle,
      }),

    get: (id: number) => t.call('expenses.get', { params: { id }, responseSchema: expenseSingle }),

    /** Only the fields sent change. */
    update: (id: number, body: UpdateExpenseBody) =>
      t.call('expenses.update', {
        params: { id },
        body,
        bodySchema: updateExpenseBodySchema,
        responseSchema: expenseSingle,
      }),

    /** Soft delete: the record stays, but no longer appears. */
    delete: (id: number) => t.call('expenses.delete', { params: { id }, responseSchema: okSchema }),
  };
}
