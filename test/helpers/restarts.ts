import { expect } from 'vitest';
import { CliProcess } from './cli.js';

/** How many times each command is started and stopped. */
export const ROUNDS = 10;

async function startAndStop(
  round: number,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
) {
  const cli = new CliProcess(args, env);
  try {
    // `ebsync dev` mirrors its demo data first: minutes on a loaded machine.
    await cli.waitForLine(ready, 240_000);
    return await cli.stop(round % 2 === 0 ? 'SIGTERM' : 'SIGINT', 60_000);
  } finally {
    cli.killAll();
  }
}

/** ROUNDS starts and stops of one command, alternating SIGTERM and SIGINT; every exit 0. */
export async function everyRoundExitsClean(
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
