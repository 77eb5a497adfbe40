import { AMOUNT, ID, numberField, readNumber } from '../body-fields.js';
import type { StoredRecord } from '../db.js';
import type { Handlers, SandboxContext } from '../context.js';
import { item, money, ok, refOne, single, type Item } from '../envelope.js';
import { FieldErrors, notFound } from '../errors.js';
import { dateForm, parseYmd, businessNow } from '../time.js';

/**
 * Expenses a business records (payments to a custom payee or to a staff member).
 *
 * Record type 'expense' (ExpenseAttrs). amount is kept in cents; responses carry it as the
 * spec's money quartet (amount, amount_cents, amount_currency, amount_formatted). Deleting
 * is a soft delete: the record stays, but fetches answer 404.
 */
export const PAYEE_TYPES = ['custom', 'staff'] as const;
export type PayeeType = (typeof PAYEE_TYPES)[number];

/** What a caller sets; ExpenseAttrs adds the id and creation time. */
export interface ExpenseInput {
  payee_type: PayeeType;
  payee_value: string | null;
  staff_id: number | null;
  payment_date: string;
  payment_method: string | null;
  amount_cents: number;
  ref_no: string;
  description: string | null;
  expense_category_id: number | null;
  event_id: number | null;
}

export interface ExpenseAttrs extends ExpenseInput, Record<string, unknown> {
  id: number;
  created_at: string;
}

export function createExpense(
  ctx: SandboxContext,
  businessId: number,
  input: ExpenseInput,
  opts: { silent?: boolean } = {},
): StoredRecord<ExpenseAttrs> {
  return ctx.records.insert<ExpenseAttrs>(
    'expense',
    businessId,
    (id) => ({ ...input, id, created_at: businessNow(ctx, businessId) }),
    opts.silent ? { silent: true } : {},
  );
}

interface StaffRow {
  id: number;
  name: string;
  email: string;
  role: string;
}

function staffOf(ctx: SandboxContext, businessId: number, id: number): StaffRow | undefined {
  const row = ctx.db
    .prepare('SELECT id, name, email, role FROM users WHERE id = ? AND business_id = ?')
    .get(id, businessId) as StaffRow | undefined;
  // Customers are users too, but cannot be paid as staff.
  return row && row.role !== 'customer' ? row : undefined;
}

function currencyOf(ctx: SandboxContext, businessId: number): string {
  const row = ctx.db.prepare('SELECT currency FROM businesses WHERE id = ?').get(businessId) as
    { currency: string } | undefined;
  return row?.currency ?? 'USD';
}

export function expenseItem(ctx: SandboxContext, r: StoredRecord<ExpenseAttrs>): Item {
  const { amount_cents, ...rest } = r.attrs;
  const staff = rest.staff_id === null ? undefined : staffOf(ctx, r.businessId, rest.staff_id);
  return item(
    'expense',
    {
      ...rest,
      ...money('amount', amount_cents, currencyOf(ctx, r.businessId)),
      staff_name: staff?.name ?? null,
      payee_name: rest.payee_type === 'staff' ? (staff?.name ?? null) : rest.payee_value,
    },
    { event: refOne('event', rest.event_id), staff: refOne('user', rest.staff_id) },
  );
}

type Body = Record<string, unknown>;

function has(body: Body, name: string): boolean {
  return Object.prototype.hasOwnProperty.call(body, name) && body[name] !== undefined;
}

/**
 * Reads the sent fields into a patch; type errors are collected. Rules that span fields are
 * checked afterwards on the merged record, so an update is held to the same rules as a create.
 */
function readPatch(
  body: Body,
  errors: FieldErrors,
): { patch: Partial<ExpenseAttrs>; bad: Set<string> } {
  const patch: Partial<ExpenseAttrs> = {};
  const bad = new Set<string>();
  const fail = (name: string, message: string) => {
    bad.add(name);
    errors.add(name, message);
  };
  const text = (name: 'payee_value' | 'payment_method' | 'ref_no' | 'description') => {
    if (!has(body, name)) return;
    const v = body[name];
    if (v === null) patch[name] = null as never;
    else if (typeof v === 'string') patch[name] = (v.trim() === '' ? null : v.trim()) as never;
    else if (typeof v === 'number' && name === 'ref_no') patch.ref_no = String(v);
    else fail(name, 'must be a string');
  };
  text('payee_value');
  text('payment_method');
  text('ref_no');
  text('description');

  if (has(body, 'payee_type')) {
    const v = body.payee_type;
    if ((PAYEE_TYPES as readonly unknown[]).includes(v)) patch.payee_type = v as PayeeType;
    else if (v === null || v === '') patch.payee_type = null as never;
    else fail('payee_type', `is not included in the list (${PAYEE_TYPES.join(', ')})`);
  }
  const integer = (name: 'staff_id' | 'expense_category_id' | 'event_id') => {
    if (!has(body, name)) return;
    const v = numberField(body, name, errors, ID);
    if (v === undefined) bad.add(name);
    else patch[name] = v;
  };
  integer('staff_id');
  integer('expense_category_id');
  integer('event_id');

  if (has(body, 'payment_date')) {
    const v = body.payment_date;
    if (v === null || v === '') patch.payment_date = null as never;
    else if (parseYmd(v)) patch.payment_date = (v as string).trim();
    else fail('payment_date', `must be ${dateForm('YYYY-MM-DD')}`);
  }
  if (has(body, 'amount')) {
    const v = body.amount;
    if (v === null || v === '') patch.amount_cents = null as never;
    else {
      const amount = readNumber(v, AMOUNT);
      if (typeof amount === 'number') patch.amount_cents = Math.round(amount * 100);
      else fail('amount', amount);
    }
  }
  return { patch, bad };
}

/** The rules every stored expense obeys, checked on the record as it would be saved. */
function checkRecord(
  ctx: SandboxContext,
  businessId: number,
  e: Partial<ExpenseAttrs>,
  errors: FieldErrors,
  bad: ReadonlySet<string>,
): void {
  const add = (name: string, message: string) => {
    if (!bad.has(name)) errors.add(name, message);
  };
  if (!e.payee_type) add('payee_type', "can't be blank");
  if (e.payee_type === 'custom' && !e.payee_value) add('payee_value', "can't be blank");
  if (e.payee_type === 'staff') {
    if (e.staff_id === null || e.staff_id === undefined) add('staff_id', "can't be blank");
    else if (!staffOf(ctx, businessId, e.staff_id))
      add('staff_id', 'is not a staff member of this business');
  }
  if (!e.payment_date) add('payment_date', "can't be blank");
  if (e.amount_cents === null || e.amount_cents === undefined) add('amount', "can't be blank");
  if (!e.ref_no) add('ref_no', "can't be blank");
  if (typeof e.event_id === 'number' && !ctx.records.get('event', businessId, e.event_id)) {
    add('event_id', 'must exist');
  }
}

function loadExpense(ctx: SandboxContext, businessId: number, rawId: string | undefined) {
  const record = ctx.records.get<ExpenseAttrs>('expense', businessId, Number(rawId));
  if (!record) throw notFound('Expense', rawId ?? '');
  return record;
}

export function expensesHandlers(): Handlers {
  return {
    'expenses.create': ({ ctx, caller, body }) => {
      const errors = new FieldErrors();
      const { patch, bad } = readPatch(body as Body, errors);
      const draft: Partial<ExpenseAttrs> = {
        payee_value: null,
        staff_id: null,
        payment_method: null,
        description: null,
        expense_category_id: null,
        event_id: null,
        ...patch,
      };
      checkRecord(ctx, caller.businessId, draft, errors, bad);
      errors.throwIfAny();
      const record = createExpense(ctx, caller.businessId, draft as ExpenseInput);
      return single(expenseItem(ctx, record));
    },

    'expenses.get': ({ ctx, caller, params }) =>
      single(expenseItem(ctx, loadExpense(ctx, caller.businessId, params.id))),

    'expenses.update': ({ ctx, caller, params, body }) => {
      const record = loadExpense(ctx, caller.businessId, params.id);
      const errors = new FieldErrors();
      const { patch, bad } = readPatch(body as Body, errors);
      checkRecord(ctx, caller.businessId, { ...record.attrs, ...patch }, errors, bad);
      errors.throwIfAny();
      return single(expenseItem(ctx, ctx.records.update(record, patch)));
    },

    'expenses.delete': ({ ctx, caller, params }) => {
      ctx.records.softDelete(loadExpense(ctx, caller.businessId, params.id), ctx.clock.iso());
      return ok();
    },
  };
}
