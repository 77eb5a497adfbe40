import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';
import { tcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';

/**
 * `ebsync status --serve` is the page an operator watches, most wanted when part of the system
 * is down. Started while Temporal could not be reached, it used to exit with "cannot reach
 * Temporal"; it now serves the page, which says Temporal is away (503 temporal_unavailable)
 * and shows the status once Temporal answers. What waiting cannot mend is still said in one
 * line: a namespace that does not exist, found once Temporal answers. `ebsync status` (one
 * report) still refuses.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-status-away-'));
const servers: CliProcess[] = [];
const relays: TcpRelay[] = [];

afterAll(async () => {
  for (const server of servers) {
    await server.stop('SIGTERM', 30_000).catch(() => server.killAll());
  }
  for (const relay of relays) await relay.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function get(url: string, path: string): Promise<{ code: number; body: string }> {
  const res = await fetch(new URL(path, url));
  return { code: res.status, body: await res.text() };
}

/** A relay to the tests' Temporal that ends every connection: Temporal away for these only. */
async function awayTemporal(): Promise<TcpRelay> {
  const relay = await tcpRelay(inject('temporalAddress'));
  relays.push(relay);
  relay.refuse();
  return relay;
}

async function envFor(relay: TcpRelay, extra: Record<string, string> = {}) {
  return {
    EBSYNC_DATA_DIR: dir,
    TEMPORAL_ADDRESS: `127.0.0.1:${relay.port}`,
    TEMPORAL_TASK_QUEUE: `status-away-${process.pid}`,
    EBSYNC_STATUS_PORT: String(await freePort()),
    EBSYNC_WEBHOOK_PORT: String(await freePort()),
    ...extra,
  };
}

/** Starts `status --serve`, waits for its banner; its URL. */
async function serve(env: Record<string, string>): Promise<{ server: CliProcess; url: string }> {
  const server = new CliProcess(['status', '--serve'], env);
  servers.push(server);
  const line = await server.waitForLine(/^Status page: http/, 60_000);
  return { server, url: /(http:\/\/\S+)/.exec(line)![1]! };
}

describe('ebsync status --serve with Temporal away', () => {
  it('starts, says Temporal is away, shows the status once Temporal answers, and stops cleanly', async () => {
    const relay = await awayTemporal();
    const env = await envFor(relay);
    // One report: nothing to show, so it refuses in one line, as before.
    const once = await runCli(['status'], env);
    expect(once.code).not.toBe(0);
    expect(once.stderr.trim().split('\n')).toHaveLength(1);
    expect(once.stderr).toMatch(/cannot reach Temporal at 127\.0\.0\.1:\d+/);

    const { server, url } = await serve(env);
    // Written before the banner, but through another pipe: it may come in just after.
    await expect
      .poll(() => server.stderr, { timeout: 5_000 })
      .toMatch(
        /^ebsync: cannot reach Temporal at 127\.0\.0\.1:\d+ \(.+\); .*The page is up meanwhile: it says Temporal could not be reached, and shows the status once Temporal answers\n$/,
      );
    const away = await get(url, 'status.json');
    expect(away.code).toBe(503);
    expect(JSON.parse(away.body)).toMatchObject({
      meta: { status: 'error' },
      reason: 'temporal_unavailable',
    });
    // The page answers; what its script fills in says the same.
    expect((await get(url, '')).code).toBe(200);
    const fragment = await get(url, 'fragment');
    expect(fragment.code).toBe(503);
    expect(JSON.parse(fragment.body)).toMatchObject({
      message: expect.stringMatching(/^Temporal at 127\.0\.0\.1:\d+ could not be reached/),
    });

    relay.accept();
    let back = away;
    for (const until = Date.now() + 60_000; Date.now() < until && back.code !== 200;) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      back = await get(url, 'status.json');
    }
    expect(back.code, back.body).toBe(200);
    const report = JSON.parse(back.body) as Record<string, unknown>;
    expect(report.stale).toBeUndefined();
    expect(Array.isArray(report.connections)).toBe(true);
    expect((await get(url, 'fragment')).body).toContain('Connections (');
    expect(server.running).toBe(true);

    const stopped = await server.stop('SIGTERM', 15_000);
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).not.toMatch(/still held open/);
  }, 180_000);

  it('ends in one line, exit 2, when Temporal answers that its namespace does not exist', async () => {
    const relay = await awayTemporal();
    const env = await envFor(relay, { TEMPORAL_NAMESPACE: `missing-${process.pid}` });
    const { server } = await serve(env);
    relay.accept();
    const ended = await Promise.race([
      server.exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('still serving 60 s after Temporal answered')), 60_000),
      ),
    ]);
    expect(ended.code).toBe(2);
    const lines = ended.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(
      new RegExp(`^ebsync: TEMPORAL_NAMESPACE 'missing-${process.pid}' does not exist at`),
    );
  }, 180_000);
});
