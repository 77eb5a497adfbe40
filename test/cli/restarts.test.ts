import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CliProcess } from '../helpers/cli.js';

/**
 * Every start must end in a clean exit: on Node 24, better-sqlite3 12 aborted (SIGABRT, exit
 * 134) in 4 of 6 sandbox starts while closing its statements. Ten in a row, each with a
 * database file that is really opened and written, and each stopped by a different signal.
 */
const ROUNDS = 10;
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-restarts-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function startAndStop(
  round: number,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
) {
  const cli = new CliProcess(args, env);
  try {
    await cli.waitForLine(ready, 90_000);
    return await cli.stop(round % 2 === 0 ? 'SIGTERM' : 'SIGINT', 60_000);
  } finally {
    cli.killAll();
  }
}

describe(`${ROUNDS} starts and stops, each exit 0 (${process.version})`, () => {
  it('ebsync sandbox, on one database file', async () => {
    const codes: (number | null)[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const result = await startAndStop(
        round,
        ['sandbox', '--port', '0', '--db', join(dir, 'sandbox.db'), '--leads', '50'],
        { EBSYNC_DATA_DIR: join(dir, 'data') },
        /sandbox ready/,
      );
      codes.push(result.code);
      expect(result.signal, result.stderr).toBeNull();
      expect(result.stderr).not.toMatch(/Assertion failed|Aborted|Segmentation/);
    }
    expect(codes).toEqual(Array<number>(ROUNDS).fill(0));
  }, 300_000);

  it('ebsync worker, with its token journal', async () => {
    const codes: (number | null)[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const result = await startAndStop(
        round,
        ['worker'],
        {
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          TEMPORAL_TASK_QUEUE: `restarts-${round}`,
          EBSYNC_DATA_DIR: join(dir, 'data'),
        },
        /worker started/,
      );
      codes.push(result.code);
      expect(result.signal, result.stderr).toBeNull();
      expect(result.stderr).not.toMatch(/Assertion failed|Aborted|Segmentation/);
    }
    expect(codes).toEqual(Array<number>(ROUNDS).fill(0));
  }, 600_000);
});
