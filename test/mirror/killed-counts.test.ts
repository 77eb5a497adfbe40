import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { killedWorkerRig } from './killed-worker-rig.js';
import { progressOf } from './progress.js';
import { sourceIds } from './source-truth.js';

/**
 * A worker SIGKILLed in the middle of an activity that had written rows: those rows must be in
 * the pass's counts. They were counted only when the activity returned, so the retry (which
 * reads the same pages again, its cursor being the one before) found them in the ledger and
 * counted them read again: the summary's "written" fell short of the rows written, the pass
 * done, exit 0 (found black-box: 4863 written for 4958 rows in a new file).
 */
const LEADS = 3_000;

const rig = killedWorkerRig(
  'killed-counts',
  { seed: { leads: LEADS } },
  {
    reachLimit: 10_000,
    per: 100,
  },
);

/** Rows in the mirror's file now (read beside the worker's writes: WAL). */
function rowsIn(file: string): number {
  if (!existsSync(file)) return 0;
  const db = new Database(file, { readonly: true });
  try {
    const count = (table: string) =>
      (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    return count('leads') + count('lead_bookings');
  } catch {
    // The tables are not made yet.
    return 0;
  } finally {
    db.close();
  }
}

describe('a worker killed after writing part of an activity', () => {
  it("counts the rows that activity wrote: the summary's written equals the rows", async () => {
    const { ts, temporal } = rig;
    const taskQueue = temporal.taskQueue();
    const file = join(rig.dir, 'mirror.db');
    const start = () => rig.start(taskQueue);
    // Slow answers make each activity's slice span many pages, and so many write batches.
    ts.sb.admin.setFaults({ latencyMs: 150 });
    let worker = await start();
    const handle = await temporal.client.workflow.start(mirrorWorkflow, {
      taskQueue,
      workflowId: `mirror-killed-counts-${taskQueue}`,
      args: [
        { connectionId: 'c1', destination: `sqlite:${file}`, subjects: ['leads'], mode: 'full' },
      ],
    });

    // Until the file holds more rows than the pass has counted: an activity under way wrote
    // batches it has not yet reported. Then the service stops answering, so that no write is
    // half done when the worker is killed.
    let rows = 0;
    let counted = 0;
    for (let tries = 0; tries < 400; tries += 1) {
      const p = await progressOf(handle, (q) => q.phase !== 'planning');
      expect(p.phase, 'killed while the leads are read').toBe('reading');
      counted = p.counts.written + p.counts.unchanged + (p.counts.again ?? 0);
      rows = rowsIn(file);
      if (rows > counted) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    ts.sb.admin.setFaults({ latencyMs: 60_000 });
    // Time for the batches under way to be written and counted (milliseconds each).
    await new Promise((r) => setTimeout(r, 2_000));
    expect(rowsIn(file), 'written by the activity, not yet reported').toBeGreaterThan(counted);
    await worker.kill();
    ts.sb.admin.clearFaults();
    worker = await start();

    const summary = await handle.result();
    expect(summary.phase).toBe('done');
    const total = rowsIn(file);
    expect(total).toBe(sourceIds(ts.sb, 'lead').size + sourceIds(ts.sb, 'lead_booking').size);
    const c = summary.counts;
    // A new file: every row was written once by this pass, and counted once as written.
    expect(c.written).toBe(total);
    expect(c.unchanged).toBe(0);
    // What the retry read again (the killed activity's pages) is counted apart, and it all adds up.
    expect(c.again ?? 0).toBeGreaterThan(0);
    expect(c.read).toBe(c.written + c.unchanged + (c.again ?? 0) + c.refused);
    await worker.stop();
  }, 300_000);
});
