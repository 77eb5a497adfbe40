import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMirrorPass } from '../helpers/mirror-pass.js';
import { startSandboxMirror, type SandboxMirror } from '../fixtures/sandbox-mirror.js';

/**
 * A lead's budget is a bare JSON number, and nothing bounds it: a black-box run with one lead's
 * estimated_budget at 1e20 failed every pass, into SQLite and Postgres alike ("leads record
 * "8": estimated_budget_cents must be a whole number of cents, got a whole number"), with no
 * lead written. An amount with no exact count of cents has no honest cents value: null, as for
 * an amount with more than two decimals, and the rest of the lead is written. The amount
 * itself stays in the record under its own name: nothing the service sent is lost.
 */
let harness: SandboxMirror;

beforeAll(async () => {
  harness = await startSandboxMirror(
    'huge-amount',
    { seed: { leads: 30, events: 0, seed: 'ha' } },
    { reachLimit: 10_000, per: 100 },
  );
  harness.ts.sb.admin.patchRecord('lead', 3, { estimated_budget: 1e20 });
  harness.ts.sb.admin.patchRecord('lead', 4, { estimated_budget: 1234.5 });
}, 240_000);

afterAll(async () => {
  await harness?.close();
});

describe('a lead whose budget is too large for whole cents', () => {
  it('is written without its cents but with its own text, and the pass completes', async () => {
    const summary = await runMirrorPass(
      harness.temporal,
      harness.deps,
      {
        connectionId: 'c1',
        destination: harness.sqlite('mirror.db'),
        subjects: ['leads'],
        mode: 'full',
      },
      'huge-amount',
    );
    expect(summary.error ?? null).toBeNull();
    expect(summary.phase).toBe('done');
    const db = new Database(harness.sqlite('mirror.db').slice('sqlite:'.length), {
      readonly: true,
    });
    const budget = db.prepare(`SELECT estimated_budget_cents AS c FROM leads WHERE id = ?`);
    expect(budget.get('3')).toEqual({ c: null });
    expect(budget.get('4')).toEqual({ c: 123_450 });
    const record = db.prepare(`SELECT record FROM leads WHERE id = ?`);
    const attributes = (id: string) =>
      (
        JSON.parse((record.get(id) as { record: string }).record) as {
          attributes: Record<string, unknown>;
        }
      ).attributes;
    expect(attributes('3').estimated_budget).toBe(1e20);
    // A readable amount keeps its cents alone, as before.
    expect(attributes('4')).not.toHaveProperty('estimated_budget');
    expect(db.prepare(`SELECT count(*) AS n FROM leads`).get()).toEqual({ n: 30 });
    db.close();
  }, 300_000);
});
