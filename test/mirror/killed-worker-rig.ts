import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import type { SandboxOptions } from '../../sandbox/server.js';
import { startMirrorWorker, type MirrorWorkerProcess } from '../fixtures/mirror-worker-process.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';

/**
 * What the tests that SIGKILL a mirror worker share: an HTTPS sandbox (the worker process
 * reads its CA), the shared dev server, a directory for the store and the mirror, and one
 * worker process at a time, killed by the test and started again.
 */
export interface KilledWorkerRig {
  readonly ts: TestSandbox;
  readonly temporal: TemporalHarness;
  readonly dir: string;
  /** Starts a worker of `taskQueue` (the one before it must be killed or stopped first). */
  start(taskQueue: string): Promise<MirrorWorkerProcess>;
}

/** Sets the rig up before the file's tests and tears it down after (vitest hooks). */
export function killedWorkerRig(
  name: string,
  sandbox: SandboxOptions,
  worker: { reachLimit: number; per: number },
): KilledWorkerRig {
  let ts: TestSandbox | undefined;
  let temporal: TemporalHarness | undefined;
  let current: MirrorWorkerProcess | undefined;
  const dir = mkdtempSync(join(tmpdir(), `ebsync-${name}-`));
  beforeAll(async () => {
    ts = await startTestSandbox({ https: true, ...sandbox });
    temporal = await connectTemporal();
  }, 240_000);
  afterAll(async () => {
    ts?.sb.admin.clearFaults();
    await current?.kill();
    await temporal?.close();
    await ts?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const rig: KilledWorkerRig = {
    get ts() {
      if (!ts) throw new Error('the rig is set up in beforeAll');
      return ts;
    },
    get temporal() {
      if (!temporal) throw new Error('the rig is set up in beforeAll');
      return temporal;
    },
    dir,
    async start(taskQueue) {
      current = await startMirrorWorker({
        temporalAddress: inject('temporalAddress'),
        taskQueue,
        bundlePath: rig.temporal.bundlePath,
        sb: rig.ts.sb,
        store: `sqlite:${join(dir, 'store.db')}`,
        ...worker,
        name,
      });
      return current;
    },
  };
  return rig;
}
