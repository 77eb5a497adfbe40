import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mirrorRun } from '../../cli/sync.js';
import { loadConfig } from '../../config/index.js';
import { connectClient } from '../../worker/temporal-client.js';
import { runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';

/**
 * A failure's message can quote customer data (a destination's refusal names the value it
 * refused), and Temporal keeps failures in its history. Sealed like every payload
 * (worker/failure-converter.cjs), the history holds none of it, while `ebsync sync` and
 * `ebsync status`, which hold the keys, still say why the pass failed.
 */
let stack: CliStack;
let env: Record<string, string>;
let client: Client;
let closeClient: () => Promise<void>;
const CONNECTION = 'sealed';

beforeAll(async () => {
  stack = await startCliStack({
    name: 'sealed-failures',
    sandbox: { seed: { leads: 5, events: 0 } },
    connect: CONNECTION,
  });
  env = stack.env;
  ({ client, close: closeClient } = await connectClient(
    loadConfig({ ...env, PATH: process.env.PATH ?? '' }),
  ));
}, 180_000);

afterAll(async () => {
  await closeClient?.();
  await stack?.close();
});

describe('a failure quoting customer data', () => {
  it('is shown by the commands and sealed in Temporal history', async () => {
    const file = join(stack.dir, 'mirror.db');
    const to = `sqlite:${file}`;
    const sync = (...extra: string[]) =>
      runCli(['sync', 'leads', '--connection', CONNECTION, '--to', to, ...extra], env, 90_000);
    const first = await sync();
    expect(first.code, first.stderr).toBe(0);

    // A rule of the user's own in the destination, whose refusal quotes the row's email.
    const db = new Database(file);
    const emails = db
      .prepare<[], { email: string }>('SELECT email FROM leads WHERE email IS NOT NULL')
      .all()
      .map((r) => r.email);
    for (const when of ['INSERT', 'UPDATE']) {
      db.exec(`CREATE TRIGGER refuse_${when} BEFORE ${when} ON leads
        BEGIN SELECT RAISE(ABORT, 'blocked address ' || NEW.email); END`);
    }
    db.close();
    expect(emails.length).toBeGreaterThan(0);

    const refused = await sync('--full', '--rewrite');
    const said = refused.stdout + refused.stderr;
    expect(refused.code, said).toBe(1);
    expect(said).toMatch(/blocked address \S+@/);
    const status = await runCli(['status'], env, 60_000);
    expect(status.stdout + status.stderr).toMatch(/blocked address \S+@/);

    const { workflowId } = mirrorRun(CONNECTION, {
      subjects: ['leads'],
      destination: to,
      full: true,
    });
    const history = JSON.stringify(await client.workflow.getHandle(workflowId).fetchHistory());
    // Booleans: a failed expectation would print the whole history.
    expect(history.includes('Encoded failure'), 'no sealed failure in the history').toBe(true);
    for (const email of emails) {
      expect(history.includes(email), `${email} in clear in the history`).toBe(false);
    }
    expect(history.includes('blocked address'), 'the message in clear in the history').toBe(false);
  }, 240_000);
});
