import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { closedPort } from '../helpers/ports.js';

/**
 * What `ebsync schedule` refuses from its command line alone, before any call to Temporal:
 * Temporal's address is a port nothing listens on, so a check that came after a call would
 * fail with "cannot reach Temporal" (exit 1) instead of the line asked for (exit 2).
 */
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-schedule-refusals-'));
  env = { EBSYNC_DATA_DIR: dir, TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}` };
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const refused = async (args: readonly string[], message: string): Promise<void> => {
  const result = await runCli(['schedule', ...args], env);
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
  expect(result.stderr).toContain(message);
};

describe('ebsync schedule pause|resume --note', { timeout: 60_000 }, () => {
  it.for([
    ['pause', 'x'.repeat(2000), '--note is 2000 characters'],
    ['resume', 'x'.repeat(1001), '--note is 1001 characters'],
    // Temporal counts bytes: 600 two-byte characters are 1,200 of them.
    ['pause', 'é'.repeat(600), '--note is 600 characters (1200 bytes)'],
  ] as const)('%s with a note over 1,000 bytes: one line, exit 2', async ([verb, note, says]) => {
    await refused([verb, 'sync-x-all-full', '--note', note], says);
    await refused([verb, 'sync-x-all-full', '--note', note], '1000 bytes at most');
  });

  it('lets a note of 1,000 bytes through to Temporal', async () => {
    const result = await runCli(
      ['schedule', 'pause', 'sync-x-all-full', '--note', 'x'.repeat(1000)],
      env,
    );
    // Past the check: this Temporal does not answer.
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain('cannot reach Temporal');
  });
});
