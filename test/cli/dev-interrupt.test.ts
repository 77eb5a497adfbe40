import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { canConnect } from '../../worker/dev-server.js';
import { CliProcess, freePort } from '../helpers/cli.js';

/**
 * `npm start` stopped with Ctrl-C while its first mirror pass runs. Here `ebsync dev` starts a
 * dev server of its own, as on a fresh clone: Ctrl-C reaches that server at the same moment,
 * so the Temporal calls still out fail and are retried just as their clients close. A retry
 * on a closed client used to crash the process ("Channel has been shut down", a stack trace).
 * That server now has a process group of its own and is stopped once the worker has stopped;
 * the worker gives running activities a short grace, not EBSYNC_SHUTDOWN_GRACE's (30 s), so
 * `dev` exits in seconds.
 */
let dir: string;
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!done()) {
    if (Date.now() - started > timeoutMs) throw new Error(`no ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('npm start: Ctrl-C during the first pass', () => {
  it('stops everything it started, worker stopped and exit 0, no stack trace', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ebsync-dev-interrupt-'));
    const [port, uiPort] = [await freePort(), await freePort()];
    const dev = new CliProcess(['dev', '--ui-port', String(uiPort)], {
      // Nothing answers there, so `dev` starts its own dev server in its process group.
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      EBSYNC_DATA_DIR: join(dir, 'data'),
      EBSYNC_WEBHOOK_PORT: '0',
      EBSYNC_STATUS_PORT: '0',
    });
    try {
      await dev.waitForLine(/^Mirroring leads, events and appointments /, 120_000);
      // A progress line with records read (one every 5 s): the progress poll and the wait for
      // the result are out, and the pass's activities are running.
      await until(
        () => /^\w+: [1-9]\d*(\/\d+)? read[, ]/m.test(dev.stderr),
        60_000,
        'progress line with records read',
      );
      // With the default grace: a few seconds (15 s for a loaded machine). It took 20 to 40 s
      // while the worker waited its grace out, then core's retries to a stopped server.
      const interrupted = Date.now();
      const stopped = await dev.interrupt(120_000);
      expect(Date.now() - interrupted).toBeLessThan(15_000);
      // Still mid-pass when Ctrl-C came: no summary.
      expect(stopped.stdout).not.toMatch(/^The data is in /m);
      expect(stopped.stderr).not.toMatch(/Channel has been shut down/);
      expect(stopped.stderr).not.toMatch(/^\s+at /m);
      expect(stopped.stdout).toMatch(/"msg":"worker stopped"/);
      // As after a finished pass: exit 0, not the signal, and nothing of the group left.
      expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 0, signal: null });
      const group = dev.child.pid;
      expect(group).toBeGreaterThan(0);
      expect(() => process.kill(-(group ?? 0), 0)).toThrow(/ESRCH/);
      // The dev server, in a process group of its own, was stopped too.
      expect(await canConnect('127.0.0.1', port)).toBe(false);
    } finally {
      dev.killAll();
    }
  }, 240_000);

  it('stops in seconds when Ctrl-C comes at start-up, before the pass is watched', async () => {
    // On a server dev does not own (the suite's), where the worker keeps its full grace. The
    // job's first steps wait for workflows' answers (the demo connection saved, the pass
    // started), up to 30 s each, and the worker that would answer stops at once: they are
    // cancelled, not waited out.
    dir ??= mkdtempSync(join(tmpdir(), 'ebsync-dev-interrupt-'));
    const dev = new CliProcess(['dev'], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: 'dev-interrupt-start',
      EBSYNC_DATA_DIR: join(dir, 'start'),
      EBSYNC_WEBHOOK_PORT: '0',
      EBSYNC_STATUS_PORT: '0',
    });
    try {
      await dev.waitForLine(/^Status page: /, 120_000);
      const interrupted = Date.now();
      const stopped = await dev.interrupt(120_000);
      expect(Date.now() - interrupted).toBeLessThan(15_000);
      expect(stopped.stderr).not.toMatch(/got no answer|^\s+at /m);
      expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 0, signal: null });
    } finally {
      dev.killAll();
    }
  }, 240_000);
});
