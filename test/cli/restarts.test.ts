import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CliProcess } from '../helpers/cli.js';

/**
 * Every start must end in a clean exit: on Node 24, better-sqlite3 12 aborted (SIGABRT, exit
 * 134) in 4 of 6 sandbox starts while closing its statements. Ten in a row of the sandbox, a
 * worker and `ebsync dev`, each with database files that are really opened and written, and
 * each stopped by a different signal.
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

/** ROUNDS starts and stops of one command, alternating SIGTERM and SIGINT; every exit 0. */
async function everyRoundExitsClean(
  args: string[],
  envOf: (round: number) => Record<string, string>,
  ready: RegExp,
): Promise<void> {
  const codes: (number | null)[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const result = await startAndStop(round, args, envOf(round), ready);
    codes.push(result.code);
    expect(result.signal, result.stderr).toBeNull();
    expect(result.stderr).not.toMatch(/Assertion failed|Aborted|Segmentation/);
  }
  expect(codes).toEqual(Array<number>(ROUNDS).fill(0));
}

describe(`${ROUNDS} starts and stops, each exit 0 (${process.version})`, () => {
  it('ebsync sandbox, on one database file', async () => {
    await everyRoundExitsClean(
      ['sandbox', '--port', '0', '--db', join(dir, 'sandbox.db'), '--leads', '50'],
      () => ({ EBSYNC_DATA_DIR: join(dir, 'data') }),
      /sandbox ready/,
    );
  }, 300_000);

  it('ebsync worker, with its token journal', async () => {
    await everyRoundExitsClean(
      ['worker'],
      (round) => ({
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: `restarts-${round}`,
        EBSYNC_DATA_DIR: join(dir, 'data'),
      }),
      /worker started/,
    );
  }, 600_000);

  it('ebsync dev (npm start), each run mirroring its demo data', async () => {
    // Ready once the mirror has written: the sandbox's, the ledger's and the destination's
    // files are all open when the stop comes. The first run fills them, the next ones pass
    // over them again.
    await everyRoundExitsClean(
      ['dev'],
      () => ({
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: 'restarts-dev',
        EBSYNC_DATA_DIR: join(dir, 'dev'),
      }),
      /^The data is in /,
    );
  }, 900_000);
});
