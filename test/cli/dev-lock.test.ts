import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';

/**
 * One `ebsync dev` per data directory. A second one on the same directory used to start
 * anyway: a second worker, its status page on a random port, and no webhook receiver, with
 * only a warning in the log for the explicitly set EBSYNC_WEBHOOK_PORT it could not have.
 */
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-dev-lock-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const env = (data: string, extra: Record<string, string> = {}) => ({
  TEMPORAL_ADDRESS: inject('temporalAddress'),
  TEMPORAL_TASK_QUEUE: 'dev-lock',
  EBSYNC_DATA_DIR: data,
  EBSYNC_WEBHOOK_PORT: '0',
  EBSYNC_STATUS_PORT: '0',
  // The server is the suite's, not dev's own: without this a Ctrl-C mid-pass waits 30 s.
  EBSYNC_SHUTDOWN_GRACE: '1s',
  ...extra,
});

describe('ebsync dev on a data dir in use', () => {
  it('refuses a second dev on the same data dir in one line, and frees it on exit', async () => {
    const data = join(dir, 'shared');
    const first = new CliProcess(['dev'], env(data));
    try {
      await first.waitForLine(/^Status page: /, 120_000);
      const second = await runCli(['dev'], env(data), 30_000);
      expect(second.code).toBe(1);
      expect(second.stderr.trim().split('\n')).toEqual([
        `ebsync: ebsync dev is already running on data dir ${data} (pid ${first.child.pid}); ` +
          'stop it first, or give this one another EBSYNC_DATA_DIR',
      ]);
      expect(second.stdout).not.toMatch(/Status page|Temporal UI|SANDBOX/);
      expect(first.running).toBe(true);
      // Stopped mid-pass with a short grace: how a Ctrl-C mid-pass ends (exit code, output)
      // is dev-interrupt.test.ts's matter; here, that it ends by itself and frees the lock.
      const stopped = await first.interrupt(60_000);
      expect(stopped.signal, stopped.stderr).toBeNull();
      expect(existsSync(join(data, 'dev.pid'))).toBe(false);
    } finally {
      first.killAll();
    }
  }, 240_000);

  it('takes over a stale lock, and an EBSYNC_WEBHOOK_PORT in use is an error line', async () => {
    const data = join(dir, 'stale');
    mkdirSync(data, { recursive: true });
    // The pid of a process that has ended, as a crash leaves it.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
      encoding: 'utf8',
    }).stdout;
    writeFileSync(join(data, 'dev.pid'), `${gone}\n`);
    const port = await freePort();
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    try {
      const result = await runCli(
        ['dev'],
        // A task queue of its own: another data dir's keys cannot open the first test's
        // workflows, and dev refuses to join their queue (dev-foreign-keys.test.ts).
        env(data, { EBSYNC_WEBHOOK_PORT: String(port), TEMPORAL_TASK_QUEUE: 'dev-lock-stale' }),
        120_000,
      );
      expect(result.stderr).not.toMatch(/already running/);
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n')).toEqual([
        `ebsync: cannot listen on 127.0.0.1 port ${port}: the port is in use; choose another with EBSYNC_WEBHOOK_PORT`,
      ]);
      expect(existsSync(join(data, 'dev.pid'))).toBe(false);
    } finally {
      taken.close();
    }
  }, 180_000);

  it('a webhook port in use that EBSYNC_WEBHOOK_PORT did not set: one warning line in words, and dev runs on', async () => {
    // As the default port (8790) taken by another program: here a port of the config file,
    // which dev treats the same way (the receiver is lost, not the rest).
    const data = join(dir, 'port-not-set');
    const port = await freePort();
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    const configFile = join(dir, 'port-not-set.json');
    writeFileSync(configFile, JSON.stringify({ webhooks: { port } }));
    const unset: Record<string, string> = env(data, {
      TEMPORAL_TASK_QUEUE: 'dev-lock-port-not-set',
      EBSYNC_CONFIG: configFile,
    });
    delete unset.EBSYNC_WEBHOOK_PORT;
    const dev = new CliProcess(['dev'], unset);
    try {
      await dev.waitForLine(/^Status page: /, 120_000);
      const out = `${dev.stdout}${dev.stderr}`;
      const lines = out.split('\n').filter((line) => line.includes('webhook receiver'));
      expect(lines).toHaveLength(1);
      expect((JSON.parse(lines[0] ?? '{}') as { msg?: string }).msg).toBe(
        `webhook receiver not started: cannot listen on 127.0.0.1 port ${port}: the port is in use; choose another with EBSYNC_WEBHOOK_PORT`,
      );
      expect(out).not.toContain('EADDRINUSE');
      expect(dev.running).toBe(true);
      await dev.interrupt(60_000);
    } finally {
      dev.killAll();
      taken.close();
    }
  }, 240_000);
});
