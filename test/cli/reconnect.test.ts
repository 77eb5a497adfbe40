import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';

/**
 * `ebsync connect` again under a name that exists (another key, another service address)
 * takes effect at once on a worker that already holds a client of the connection. It used to
 * keep the old key for up to a minute and the old address for good, so a sync right after
 * the reconnect exited 0 having mirrored the business the connection had before.
 */
let stack: CliStack;
let other: Sandbox | undefined;
const CONNECTION = 'moved';

beforeAll(async () => {
  stack = await startCliStack({
    name: 'reconnect',
    sandbox: { seed: { leads: 20, events: 0 } },
    connect: CONNECTION,
  });
  // Another business at another address, under the same certificate authority.
  other = await startSandbox({ seed: { leads: 7, events: 0 }, certDir: join(stack.dir, 'cert') });
}, 180_000);

afterAll(async () => {
  await other?.close();
  await stack?.close();
});

const leadsIn = (file: string): number => {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM leads').get() as { n: number }).n;
  } finally {
    db.close();
  }
};

it('mirrors the new business right after a reconnect with another key at another address', async () => {
  const before = join(stack.dir, 'before.db');
  const sync = (to: string) =>
    runCli(
      ['sync', 'leads', '--full', '--connection', CONNECTION, '--to', `sqlite:${to}`],
      stack.env,
      120_000,
    );
  const first = await sync(before);
  expect(first.code, first.stderr).toBe(0);
  expect(leadsIn(before)).toBe(20);

  const moved = { ...stack.env, EBS_BASE_URL: other!.baseUrl, EBS_API_KEY: other!.apiKey };
  const connect = await runCli(['connect', '--api-key', '--name', CONNECTION], moved);
  expect(connect.code, connect.stderr).toBe(0);
  const shown = await runCli(['connections', CONNECTION, '--json'], stack.env);
  expect(shown.code, shown.stderr).toBe(0);
  expect(JSON.parse(shown.stdout)).toMatchObject({ baseUrl: other!.baseUrl });

  // At once: the worker's client of the connection is a few seconds old.
  const after = join(stack.dir, 'after.db');
  const second = await sync(after);
  expect(second.code, second.stderr).toBe(0);
  expect(leadsIn(after)).toBe(7);
});

it('keeps a paused connection paused across a reconnect, and says so', async () => {
  const pause = await runCli(['connections', 'pause', CONNECTION], stack.env);
  expect(pause.code, pause.stderr).toBe(0);
  // New credentials (a rotated key, say) are no 'resume': the syncs 'pause' said wait go on
  // waiting. A reconnect used to set the connection active without a word.
  const connect = await runCli(['connect', '--api-key', '--name', CONNECTION], stack.env);
  expect(connect.code, connect.stderr).toBe(0);
  expect(connect.stdout).toContain(
    `still paused: ${CONNECTION}; its syncs wait until 'ebsync connections resume ${CONNECTION}'`,
  );
  const shown = await runCli(['connections', CONNECTION, '--json'], stack.env);
  expect(shown.code, shown.stderr).toBe(0);
  expect(JSON.parse(shown.stdout)).toMatchObject({ state: 'paused', credentialsVersion: 2 });
  // Each value in one column, after the longest label ('reconnected at').
  const text = await runCli(['connections', CONNECTION], stack.env);
  expect(text.code, text.stderr).toBe(0);
  expect(text.stdout).toMatch(/^reconnected at +\d{4}-/m);
  const columns = text.stdout
    .trim()
    .split('\n')
    .map((line) => /^\S+(?: \S+)* +/.exec(line)?.[0].length);
  expect(new Set(columns).size, text.stdout).toBe(1);
  const resume = await runCli(['connections', 'resume', CONNECTION], stack.env);
  expect(resume.code, resume.stderr).toBe(0);
  const after = await runCli(['connections', CONNECTION, '--json'], stack.env);
  expect(JSON.parse(after.stdout)).toMatchObject({ state: 'active' });
});
