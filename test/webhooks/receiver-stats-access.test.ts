import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COUNTERS_REFUSED, PORT_UNKNOWN, webhookSection } from '../../cli/status-sections.js';
import { webhooksLine } from '../../cli/status.js';
import { localReceiverUrl } from '../../cli/webhooks.js';
import type { StatusReport } from '../../cli/status-model.js';
import { runCli } from '../helpers/cli.js';
import { loadConfig, type Config } from '../../config/index.js';
import { createLogger } from '../../worker/logger.js';
import { receiverStatsToken } from '../../worker/receiver-stats-token.js';
import { startWebhookReceiver, type RunningReceiver } from '../../worker/webhook-receiver.js';
import { closedPort } from '../helpers/ports.js';

/**
 * The receiver's counters are not public behind a reverse proxy on the same host (issue 30,
 * item 12): every request a proxy forwards comes from loopback, so `GET /webhooks/_stats`
 * asks for a token derived from the encryption keys, which the status readers share.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-stats-access-'));
let config: Config;
let receiver: RunningReceiver;

beforeAll(async () => {
  config = loadConfig({
    EBSYNC_DATA_DIR: dir,
    TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
    EBSYNC_WEBHOOK_PORT: '0',
  });
  receiver = await startWebhookReceiver(config, createLogger({ level: 'silent' }), { port: 0 });
  config = {
    ...config,
    webhooks: { ...config.webhooks, port: Number(new URL(receiver.url).port) },
  };
});
afterAll(async () => {
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /webhooks/_stats', () => {
  it.each([
    ['no token, as a same-host proxy forwards it', { 'x-forwarded-for': '203.0.113.7' }],
    ['no token, plain loopback', {}],
    ['a wrong token', { authorization: 'Bearer not-the-stats-token' }],
  ])('answers 404 to %s', async (_case, headers: Record<string, string>) => {
    const res = await fetch(`${receiver.url}/webhooks/_stats`, { headers });
    expect(res.status).toBe(404);
    expect(await res.text()).not.toMatch(/delivered/);
  });

  it('answers the token derived from the encryption keys, as the status section reads it', async () => {
    const res = await fetch(`${receiver.url}/webhooks/_stats`, {
      headers: { authorization: `Bearer ${receiverStatsToken(config)}` },
    });
    expect(res.status).toBe(200);
    const section = await webhookSection(config);
    expect(section).toMatchObject({ running: true, error: null, delivered: 0 });
  });

  it("shows a receiver that refuses the reader's token as running, its counters not shown, and why", async () => {
    // Another key: a reader with another data dir (or EBSYNC_ENCRYPTION_KEYS) than the
    // receiver's. It answers, so it is not "not running", nor down with webhooks registered.
    const other = loadConfig({
      EBSYNC_DATA_DIR: join(dir, 'other-reader'),
      TEMPORAL_ADDRESS: config.temporal.address,
      EBSYNC_WEBHOOK_PORT: String(config.webhooks.port),
    });
    const section = await webhookSection(other);
    expect(section).toMatchObject({
      running: true,
      endpoint: `${receiver.url}/webhooks/_stats`,
      error: COUNTERS_REFUSED,
    });
    expect(webhooksLine({ webhooks: section } as StatusReport)).toBe(
      `Webhook receiver: running at ${receiver.url}/webhooks/_stats, counters not shown (${COUNTERS_REFUSED})`,
    );
  });

  it("finds its data dir's receiver where it listens, whatever the setting says", async () => {
    // The receiver above listens on a port picked at start; readers set to 0, or to a port
    // where nothing listens, find it through the address it recorded in the data dir.
    const atZero = await webhookSection({ ...config, webhooks: { ...config.webhooks, port: 0 } });
    expect(atZero).toMatchObject({ running: true, endpoint: `${receiver.url}/webhooks/_stats` });
    const elsewhere = await closedPort();
    const atOther = await webhookSection({
      ...config,
      webhooks: { ...config.webhooks, port: elsewhere },
    });
    expect(atOther).toMatchObject({ running: true, endpoint: `${receiver.url}/webhooks/_stats` });
  });

  it('says a receiver on EBSYNC_WEBHOOK_PORT=0 is not known when none of its data dir runs here', async () => {
    const other = mkdtempSync(join(tmpdir(), 'ebsync-stats-none-'));
    try {
      const section = await webhookSection({
        ...config,
        dataDir: other,
        webhooks: { ...config.webhooks, port: 0 },
      });
      expect(section).toMatchObject({ running: false, error: PORT_UNKNOWN });
      const report = { webhooks: section } as unknown as StatusReport;
      expect(webhooksLine(report)).toBe(`Webhook receiver: not known (${PORT_UNKNOWN})`);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('forgets the address when the receiver stops, and a record of a process gone counts for nothing', async () => {
    const other = mkdtempSync(join(tmpdir(), 'ebsync-stats-record-'));
    try {
      const own = { ...config, dataDir: other };
      const second = await startWebhookReceiver(own, createLogger({ level: 'silent' }), {
        port: 0,
      });
      const file = join(other, 'webhook-receiver.json');
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
        pid: process.pid,
        host: '127.0.0.1',
        port: Number(new URL(second.url).port),
      });
      expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
      // A receiver started after it holds the record; the first one's stop leaves that be.
      const third = await startWebhookReceiver(own, createLogger({ level: 'silent' }), {
        port: 0,
      });
      await second.close();
      expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
        port: Number(new URL(third.url).port),
      });
      await third.close();
      expect(existsSync(file)).toBe(false);
      // A receiver of another process recorded first: a receiver started and stopped beside
      // it gives it its record back (its stop took that along, and status called it down).
      const running = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
      try {
        const theirs = { pid: running.pid!, host: '127.0.0.1', port: 18790 };
        writeFileSync(file, JSON.stringify(theirs));
        const beside = await startWebhookReceiver(own, createLogger({ level: 'silent' }), {
          port: 0,
        });
        expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ pid: process.pid });
        await beside.close();
        expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(theirs);
      } finally {
        running.kill();
      }
      await new Promise((resolve) => running.once('exit', resolve));
      // Gone since, it is not given its record back: this one's stop removes it.
      const after = await startWebhookReceiver(own, createLogger({ level: 'silent' }), {
        port: 0,
      });
      await after.close();
      expect(existsSync(file)).toBe(false);
      const unused = await closedPort();
      // A receiver killed before it could remove its record: the process is gone.
      const gone = spawnSync(process.execPath, ['-e', 'process.pid'], { encoding: 'utf8' });
      writeFileSync(file, JSON.stringify({ pid: gone.pid, host: '127.0.0.1', port: 1 }));
      const section = await webhookSection({
        ...own,
        webhooks: { ...own.webhooks, port: unused },
      });
      expect(section).toMatchObject({
        running: false,
        endpoint: `http://127.0.0.1:${unused}/webhooks/_stats`,
      });
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("registers deliveries to where its data dir's receiver listens when --url is not given", () => {
    // The receiver above is on a port picked at start: found through its record.
    expect(localReceiverUrl({ ...config, webhooks: { ...config.webhooks, port: 0 } })).toBe(
      receiver.url,
    );
    const none = mkdtempSync(join(tmpdir(), 'ebsync-stats-none-'));
    try {
      const elsewhere = { ...config, dataDir: none };
      expect(localReceiverUrl(elsewhere)).toBe(`http://127.0.0.1:${config.webhooks.port}`);
      // Listening on every interface, it is sent to at loopback, not at the wildcard.
      for (const [host, origin] of [
        ['0.0.0.0', '127.0.0.1'],
        ['::', '[::1]'],
      ] as const) {
        expect(localReceiverUrl({ ...elsewhere, webhooks: { ...elsewhere.webhooks, host } })).toBe(
          `http://${origin}:${config.webhooks.port}`,
        );
      }
      expect(
        localReceiverUrl({ ...elsewhere, webhooks: { ...elsewhere.webhooks, port: 0 } }),
      ).toBeUndefined();
    } finally {
      rmSync(none, { recursive: true, force: true });
    }
  });

  it('refuses to register deliveries to port 0 without --url, in one line', async () => {
    const none = mkdtempSync(join(tmpdir(), 'ebsync-stats-none-'));
    const result = await runCli(['webhooks', 'register', 'shop'], {
      EBSYNC_DATA_DIR: none,
      EBSYNC_WEBHOOK_PORT: '0',
    });
    rmSync(none, { recursive: true, force: true });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "ebsync: EBSYNC_WEBHOOK_PORT is 0, so the receiver's port is picked when it starts and deliveries to :0 would reach nothing, and no receiver of this data dir runs here to say which it got: give --url with the address it printed ('webhook receiver listening')\n",
    );
  });
});
