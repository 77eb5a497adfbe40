import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';
import { tcpRelay } from '../helpers/tcp-relay.js';

/**
 * `ebsync status --serve` is the page an operator watches, most wanted when part of the system
 * is down. Started while Temporal could not be reached, it used to exit with "cannot reach
 * Temporal"; it now serves the page, which says Temporal is away (503 temporal_unavailable)
 * and shows the status once Temporal answers. `ebsync status` (one report) still refuses.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-status-away-'));
let server: CliProcess | undefined;

afterAll(async () => {
  await server?.stop('SIGTERM', 30_000).catch(() => server?.killAll());
  rmSync(dir, { recursive: true, force: true });
});

async function statusJson(url: string): Promise<{ code: number; body: Record<string, unknown> }> {
  const res = await fetch(new URL('status.json', url));
  return { code: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('ebsync status --serve with Temporal away', () => {
  it('starts, says Temporal is away, and shows the status once Temporal answers', async () => {
    // A relay to the tests' Temporal, closed: Temporal is away for this page only.
    const relay = await tcpRelay(inject('temporalAddress'));
    await relay.stop();
    const env = {
      EBSYNC_DATA_DIR: dir,
      TEMPORAL_ADDRESS: `127.0.0.1:${relay.port}`,
      TEMPORAL_TASK_QUEUE: `status-away-${process.pid}`,
      EBSYNC_STATUS_PORT: String(await freePort()),
      EBSYNC_WEBHOOK_PORT: String(await freePort()),
    };
    try {
      // One report: nothing to show, so it refuses in one line, as before.
      const once = await runCli(['status'], env);
      expect(once.code).not.toBe(0);
      expect(once.stderr.trim().split('\n')).toHaveLength(1);
      expect(once.stderr).toMatch(/cannot reach Temporal at 127\.0\.0\.1:\d+/);

      server = new CliProcess(['status', '--serve'], env);
      const line = await server.waitForLine(/^Status page: http/, 60_000);
      const url = /(http:\/\/\S+)/.exec(line)![1]!;
      // Written before the banner, but through another pipe: it may come in just after.
      await expect
        .poll(() => server!.stderr, { timeout: 5_000 })
        .toMatch(
          /^ebsync: cannot reach Temporal at 127\.0\.0\.1:\d+ \(.+\); .*The page is up meanwhile: it says so, and shows the status once Temporal answers\n$/,
        );
      const away = await statusJson(url);
      expect(away.code).toBe(503);
      expect(away.body).toMatchObject({
        meta: { status: 'error' },
        reason: 'temporal_unavailable',
      });
      // The page itself answers, and its script shows the same message.
      const page = await fetch(url);
      expect(page.status).toBe(200);

      await relay.start();
      let back = away;
      for (const until = Date.now() + 60_000; Date.now() < until && back.code !== 200;) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        back = await statusJson(url);
      }
      expect(back.code, JSON.stringify(back.body)).toBe(200);
      expect(back.body.stale).toBeUndefined();
      expect(Array.isArray(back.body.connections)).toBe(true);
      expect(server.running).toBe(true);
    } finally {
      await relay.stop();
    }
  }, 180_000);
});
