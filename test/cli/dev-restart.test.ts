import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliProcess, freePort } from '../helpers/cli.js';

/**
 * `npm start`, Ctrl-C, `npm start` again, with the dev server `ebsync dev` starts itself (what
 * a user runs). The second start's server had seen no worker poll yet when the main job listed
 * the connections, so the job was told "no worker has polled task queue 'ebsync'; start one
 * ('ebsync worker' or 'npm start')", and mirrored nothing, its own worker polling a moment later.
 */
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-dev-restart-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('ebsync dev started again on its data dir, with its own dev server', () => {
  it('mirrors incrementally and prints its summary, as the first start did', async () => {
    const port = await freePort();
    const uiPort = await freePort();
    const env = {
      EBSYNC_DATA_DIR: join(dir, 'data'),
      EBSYNC_WEBHOOK_PORT: '0',
      EBSYNC_STATUS_PORT: '0',
    };
    const args = ['dev', '--port', String(port), '--ui-port', String(uiPort)];
    const first = new CliProcess(args, env);
    try {
      await first.waitForLine(/^ {2}sync-demo-all-full /, 240_000);
      expect((await first.interrupt(60_000)).code).toBe(0);
    } finally {
      first.killAll();
    }
    const second = new CliProcess(args, env);
    try {
      // Its pass has nothing to write: it ends in seconds (without the fix it never ran).
      await second.waitForLine(/^ {2}sync-demo-all-full /, 120_000);
      expect(second.stderr).not.toMatch(/no worker has polled/);
      // The 15-minute schedule fires on the clock's quarter hours: when one fell between the
      // two starts, its pass is the one running, and the command attaches to it.
      expect(second.stdout).toMatch(
        /^(Mirroring leads, events and appointments|Attached to the mirror already running) of connection demo /m,
      );
      expect(second.stdout).toMatch(/written +0 changed or new; \d+ already up to date/);
      expect(second.stdout).toMatch(/^ {2}sync-demo-all-incremental .*\(already there, kept\)$/m);
      expect((await second.interrupt(60_000)).code).toBe(0);
    } finally {
      second.killAll();
    }
  }, 600_000);
});
