import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';

/**
 * Two businesses mirrored into one destination: its tables are keyed by the service's ids
 * alone, so the second's pass replaced the first's rows, and the first's next pass found
 * "0 written; already up to date" (its ledger still held its own hashes). A destination now has
 * one writer: the second is refused before it writes, and `--forget` of the first frees it.
 */
let stack: CliStack;
let other: Sandbox;
let otherEnv: Record<string, string>;
const FIRST = 'writer-first';
const SECOND = 'writer-second';

beforeAll(async () => {
  stack = await startCliStack({
    name: 'one-writer',
    sandbox: { seed: { leads: 30, events: 0, seed: 'first' } },
    connect: FIRST,
  });
  other = await startSandbox({
    seed: { leads: 12, events: 0, seed: 'second' },
    // The certificate the worker already trusts (EBS_CA_FILE is a worker's setting).
    certDir: join(stack.dir, 'cert'),
  });
  // The second business: its own service address and key, in the same data dir and store.
  otherEnv = {
    ...stack.env,
    EBS_BASE_URL: other.baseUrl,
    EBS_API_KEY: other.apiKey,
    EBS_CA_FILE: other.caFile ?? '',
  };
  const connect = await runCli(['connect', '--api-key', '--name', SECOND], otherEnv);
  if (connect.code !== 0) throw new Error(`connect exited ${connect.code}: ${connect.stderr}`);
}, 180_000);

afterAll(async () => {
  await other?.close();
  await stack?.close();
});

/** The mirror's leads, id to email, as the default destination holds them. */
function mirroredEmails(): Map<string, string | null> {
  const db = new Database(join(stack.env.EBSYNC_DATA_DIR!, 'mirror.db'), { readonly: true });
  try {
    const rows = db
      .prepare<[], { id: string; email: string | null }>('SELECT id, email FROM leads')
      .all();
    return new Map(rows.map((r) => [r.id, r.email]));
  } finally {
    db.close();
  }
}

describe('one connection per destination', () => {
  it('refuses a second connection into a destination, writing nothing, until the first is forgotten', async () => {
    const first = await runCli(['sync', 'leads', '--connection', FIRST], stack.env, 120_000);
    expect(first.code, first.stderr).toBe(0);
    const before = mirroredEmails();
    expect(before.size).toBe(30);

    const mirrorFile = join(stack.env.EBSYNC_DATA_DIR!, 'mirror.db');
    const command = `ebsync sync --forget --connection ${FIRST} --to sqlite:${mirrorFile}`;
    // What did not happen is said once: a pass wrote nothing, a command started nothing.
    const refusal = (outcome: string) =>
      `destination sqlite:${mirrorFile} already holds the records of connection ${FIRST}, ` +
      `keyed by the service's ids alone, so connection ${SECOND}'s would overwrite them; ` +
      `${outcome}. Mirror ${SECOND} into a destination of its own (--to: another ` +
      `SQLite file, or a Postgres ?schema=NAME), or, if connection ${FIRST}'s records are no ` +
      `longer wanted there, run '${command}' first`;

    // Each command that would start writing there says so at once, in one line, exit 1.
    const second = await runCli(['sync', 'leads', '--connection', SECOND], stack.env, 120_000);
    expect(second.code).toBe(1);
    expect(second.stderr).toBe(`ebsync: ${refusal('nothing was started')}\n`);
    const scheduled = await runCli(
      ['schedule', 'create', 'leads', '--connection', SECOND, '--every', '1h'],
      stack.env,
    );
    expect(scheduled.code).toBe(1);
    expect(scheduled.stderr).toBe(`ebsync: ${refusal('no schedule was created')}\n`);
    const registered = await runCli(
      ['webhooks', 'register', SECOND, '--url', 'http://127.0.0.1:9/hooks', '--secret-stdin'],
      stack.env,
      60_000,
      `whsec_${Buffer.alloc(24, 7).toString('base64')}\n`,
    );
    expect(registered.code).toBe(1);
    expect(registered.stderr).toBe(`ebsync: ${refusal('nothing was registered')}\n`);

    // A pass started without the command's checks (as a schedule made before starts one) is
    // refused by the worker before it writes.
    const unchecked = await runCli(
      ['sync', 'leads', '--connection', SECOND, '--no-check-destination'],
      stack.env,
      120_000,
    );
    expect(unchecked.code).toBe(1);
    expect(unchecked.stdout + unchecked.stderr).toContain(refusal('nothing was written'));
    expect(mirroredEmails()).toEqual(before);

    // The first connection goes on as before.
    const again = await runCli(['sync', 'leads', '--connection', FIRST], stack.env, 120_000);
    expect(again.code, again.stderr).toBe(0);

    // The command the refusal gave, as a user would copy it.
    const forgot = await runCli(command.split(' ').slice(1), stack.env, 60_000);
    expect(forgot.code, forgot.stderr).toBe(0);
    expect(forgot.stdout).toMatch(
      new RegExp(
        `the ledger forgot the \\d+ records it wrote there, so another connection may now mirror into it \\(the rows stay in the destination; a later pass of ${FIRST} into it writes every record again\\)\\n$`,
      ),
    );

    const now = await runCli(['sync', 'leads', '--connection', SECOND], stack.env, 120_000);
    expect(now.code, now.stdout + now.stderr).toBe(0);
    const after = mirroredEmails();
    const ids = other.ctx.db
      .prepare<[string, number], { id: number }>(
        'SELECT id FROM records WHERE type = ? AND business_id = ? AND deleted_at IS NULL',
      )
      .all('lead', other.businessId)
      .map((r) => r.id);
    expect(ids).toHaveLength(12);
    for (const id of ids) {
      expect(after.get(String(id))).toBe(other.admin.record('lead', id).attributes.email);
    }
    // And now the first is the one refused.
    const back = await runCli(['sync', 'leads', '--connection', FIRST], stack.env, 120_000);
    expect(back.code).toBe(1);
    expect(back.stderr).toContain(`already holds the records of connection ${SECOND}`);
  }, 400_000);

  it('says, when forgetting, which schedules and webhook registration still write there', async () => {
    // Runs after the test above: SECOND writes the default destination now.
    const mirrorFile = join(stack.env.EBSYNC_DATA_DIR!, 'mirror.db');
    const scheduled = await runCli(
      ['schedule', 'create', 'leads', '--connection', SECOND, '--every', '1h', '--paused'],
      stack.env,
    );
    expect(scheduled.code, scheduled.stderr).toBe(0);
    const registered = await runCli(
      ['webhooks', 'register', SECOND, '--url', 'http://127.0.0.1:9/hooks', '--secret-stdin'],
      stack.env,
      60_000,
      `whsec_${Buffer.alloc(24, 7).toString('base64')}\n`,
    );
    expect(registered.code, registered.stderr).toBe(0);

    // A mistyped connection forgets nothing, and the line names the one that writes there.
    const typo = await runCli(
      ['sync', '--forget', '--connection', 'writer-secnod', '--to', `sqlite:${mirrorFile}`],
      stack.env,
      60_000,
    );
    expect(typo.code, typo.stderr).toBe(0);
    expect(typo.stdout).toBe(
      `no mirror of connection writer-secnod into sqlite:${mirrorFile}: nothing to forget (connection ${SECOND} writes it)\n`,
    );

    // The demo's schedules went on firing into the file after its mirror was forgotten, and
    // each run failed once another connection wrote there: the line now names them.
    const forgot = await runCli(
      ['sync', '--forget', '--connection', SECOND, '--to', `sqlite:${mirrorFile}`],
      stack.env,
      60_000,
    );
    expect(forgot.code, forgot.stderr).toBe(0);
    const id = `sync-${SECOND}-leads-incremental`;
    expect(forgot.stdout).toContain(
      `; still set to write there, and to claim it again or fail each time: schedule ${id} ('ebsync schedule delete ${id}') and its webhook registration (deliveries of ${SECOND} still update it: register them again with another --to)\n`,
    );
    expect(forgot.stdout.split('\n')).toHaveLength(2);

    // Another destination's forgetting does not name them.
    const elsewhere = await runCli(
      ['sync', '--forget', '--connection', SECOND, '--to', `sqlite:${join(stack.dir, 'other.db')}`],
      stack.env,
      60_000,
    );
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    expect(elsewhere.stdout).toBe(
      `no mirror of connection ${SECOND} into sqlite:${join(stack.dir, 'other.db')}: nothing to forget (no connection writes it)\n`,
    );
  }, 120_000);
});
