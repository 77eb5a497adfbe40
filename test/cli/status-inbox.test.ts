import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { findProblems, WEBHOOKS_WAITING_MS } from '../../cli/status-model.js';
import { reportHtml } from '../../cli/status-page.js';
import { inboxSection, PORT_UNKNOWN, receiverNotRunning } from '../../cli/status-sections.js';
import { openInbox } from '../../store/open-inbox.js';
import { createTestDatabase } from '../helpers/postgres.js';

/**
 * The webhook inbox as the status shows it: depth, oldest pending notice and what was drained
 * in the last minute, per connection, read from the store itself (SQLite and Postgres); a
 * notice waiting over five minutes is a problem.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-status-inbox-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const notice = (connectionId: string, deliveryId: string) => ({
  connectionId,
  deliveryId,
  resource: 'leads',
  recordId: '1',
  action: 'updated',
  occurredAt: null,
});

describe('the status of the webhook inbox', () => {
  it('reads nothing, and creates nothing, where no store exists yet', async () => {
    const config = loadConfig({ EBSYNC_DATA_DIR: join(dir, 'empty') });
    const view = await inboxSection(config);
    expect(view).toEqual({
      store: `sqlite:${join(dir, 'empty', 'store.db')}`,
      error: null,
      connections: [],
    });
    expect(existsSync(join(dir, 'empty', 'store.db'))).toBe(false);
  });

  it.each([
    ['SQLite', () => Promise.resolve(`sqlite:${join(dir, 'store.db')}`)],
    ['Postgres', () => createTestDatabase('status_inbox')],
  ])('shows depth, oldest pending and drained per connection on %s', async (_, fresh) => {
    const store = await fresh();
    const inbox = await openInbox(store);
    try {
      for (let i = 0; i < 6; i++) await inbox.accept(notice('busy', `b${i}`));
      await inbox.accept(notice('idle', 'i0'));
      const pending = await inbox.pending('busy', 4);
      await inbox.markDone(
        'busy',
        pending.map((n) => n.seq),
      );
      await inbox.markDone('idle', [(await inbox.pending('idle', 1))[0]!.seq]);
    } finally {
      await inbox.close();
    }
    const view = await inboxSection(loadConfig({ EBSYNC_DATA_DIR: dir, EBSYNC_STORE_URL: store }));
    expect(view.error).toBeNull();
    expect(view.store).not.toMatch(/:[^/@]*@/);
    expect(view.connections).toEqual([
      {
        connectionId: 'busy',
        pending: 2,
        oldestPendingAt: expect.any(Number),
        drainedLastMinute: 4,
        drainedPerSecond: 0.07,
      },
      {
        connectionId: 'idle',
        pending: 0,
        oldestPendingAt: null,
        drainedLastMinute: 1,
        drainedPerSecond: 0.02,
      },
    ]);
    expect(Date.now() - view.connections[0]!.oldestPendingAt!).toBeLessThan(60_000);
  });

  it('says when the store cannot be read, without its password', async () => {
    const view = await inboxSection(
      loadConfig({
        EBSYNC_DATA_DIR: dir,
        EBSYNC_STORE_URL: 'postgres://ebsync:hunter2@127.0.0.1:1/ebsync',
      }),
    );
    expect(view.connections).toEqual([]);
    expect(view.error).toMatch(/Postgres store failed/);
    expect(JSON.stringify(view)).not.toContain('hunter2');
  });

  it('names a connection whose notices wait over five minutes as a problem, and the page shows the inbox', () => {
    const now = Date.now();
    const inbox = {
      store: 'sqlite:/data/store.db',
      error: null,
      connections: [
        {
          connectionId: 'stuck',
          pending: 12,
          oldestPendingAt: now - WEBHOOKS_WAITING_MS - 60_000,
          drainedLastMinute: 0,
          drainedPerSecond: 0,
        },
        {
          connectionId: 'fine',
          pending: 3,
          oldestPendingAt: now - 2_000,
          drainedLastMinute: 600,
          drainedPerSecond: 10,
        },
      ],
    };
    const problems = findProblems({ inbox }, now);
    expect(problems).toEqual([
      {
        connectionId: 'stuck',
        kind: 'webhooks_waiting',
        message:
          'webhooks of connection stuck: 12 notices waiting, the oldest for 6 min (is a worker running? see its log)',
      },
    ]);
    const html = reportHtml(
      {
        generatedAt: now,
        temporal: { namespace: 'default', taskQueue: 'ebsync', uiUrl: 'http://localhost:8233' },
        connections: [],
        mirrors: [],
        destinations: [],
        schedules: [],
        webhooks: receiverNotRunning('http://127.0.0.1:8790/webhooks/_stats', 'no answer'),
        inbox,
        automations: { endpoints: [], error: null },
        rateLimitedLastHour: 0,
        problems,
      },
      new Map(),
      null,
    );
    expect(html).toContain('data-testid="inbox" data-pending="15"');
    expect(html).toMatch(
      /<tr data-connection="fine"[^>]*><td>fine<\/td><td>3<\/td><td>2 s<\/td><td>600 \(10\/s\)<\/td>/,
    );
    expect(html).toContain('12 notices waiting');
  });

  it("says why notices wait where the drain answered its last refusal, not 'is a worker running?'", () => {
    const now = Date.now();
    const refusal =
      "destination sqlite:/data/mirror.db already holds the records of connection shop, keyed by the service's ids alone, so connection other's would overwrite them; nothing was written";
    const inbox = {
      store: 'sqlite:/data/store.db',
      error: null,
      connections: [
        {
          connectionId: 'other',
          pending: 1,
          oldestPendingAt: now - WEBHOOKS_WAITING_MS - 60_000,
          drainedLastMinute: 0,
          drainedPerSecond: 0,
          lastRefusal: refusal,
        },
      ],
    };
    expect(findProblems({ inbox }, now)).toEqual([
      {
        connectionId: 'other',
        kind: 'webhooks_waiting',
        message: `webhooks of connection other: 1 notices waiting, the oldest for 6 min (the drain's last refusal: ${refusal})`,
      },
    ]);
  });

  it('makes a problem of an inbox or automation endpoints it could not read: nothing silent about them', () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const inbox = {
      store: 'postgres://***@127.0.0.1:5999/ebsync',
      error: 'the Postgres store failed: connect ECONNREFUSED 127.0.0.1:5999',
      connections: [],
    };
    const automations = { endpoints: [], error: 'sealed with another EBSYNC_ENCRYPTION_KEYS' };
    expect(findProblems({ inbox, automations }, now).map((p) => `${p.kind}: ${p.message}`)).toEqual(
      [
        'webhook_inbox_unreadable: webhook inbox (postgres://***@127.0.0.1:5999/ebsync) could not be read: the Postgres store failed: connect ECONNREFUSED 127.0.0.1:5999; whether notices wait there is not known',
        'automations_unreadable: automation endpoints could not be read: sealed with another EBSYNC_ENCRYPTION_KEYS; whether changes reach them is not known',
      ],
    );
    expect(
      findProblems(
        { inbox: { ...inbox, error: null }, automations: { endpoints: [], error: null } },
        now,
      ),
    ).toEqual([]);
  });

  it('makes a problem of one endpoint sealed with keys this process lacks, while the others are read', () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const inbox = { store: 'sqlite:x', error: null, connections: [] };
    const endpoint = {
      name: 'foreign',
      url: '(sealed)',
      filters: { resources: [], actions: [], connections: [] },
      state: 'unreadable' as const,
      failures: 0,
      openUntil: null,
      disabledReason: "payload was encrypted with key 'k2', which this process does not have",
      createdAt: new Date(now).toISOString(),
    };
    expect(
      findProblems({ inbox, automations: { endpoints: [endpoint], error: null } }, now).map(
        (p) => `${p.kind}: ${p.message}`,
      ),
    ).toEqual([
      "automations_unreadable: automation endpoint foreign could not be opened: payload was encrypted with key 'k2', which this process does not have; nothing is sent to it",
    ]);
  });

  it("makes a problem of a receiver's recent 503s, and of no receiver while webhooks are registered", () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const endpoint = 'http://127.0.0.1:8790/webhooks/_stats';
    const down = receiverNotRunning(endpoint, 'connect ECONNREFUSED 127.0.0.1:8790', ['shop']);
    const failing = {
      ...receiverNotRunning(endpoint, ''),
      running: true,
      error: null,
      failed: 7,
      failedRecently: 5,
      lastFailedAt: now - 2 * 60_000,
    };
    const problems = (receiver: typeof down) =>
      findProblems({ receiver }, now).map((p) => `${p.kind}: ${p.message}`);
    expect(problems(failing)).toEqual([
      'webhook_receiver_failing: webhook receiver: 5 deliveries not stored (answered 503) in the last 15 min, the last 2 min ago; senders retry them, but see its log (is the store reachable?)',
    ]);
    expect(problems({ ...failing, failedRecently: 0 })).toEqual([]);
    // Notices kept in the receiver's spool while the store is away: said, with how long.
    expect(
      problems({ ...failing, failedRecently: 0, spoolHeld: 12, spoolOldestAt: now - 3 * 60_000 }),
    ).toEqual([
      "webhook_receiver_spooling: webhook receiver: 12 notices kept in its spool for 3 min, as the store cannot take them; they go to the store's inbox once it can (is the store reachable? see the receiver's log)",
    ]);
    // A sender whose signatures the registered secret does not verify: said, per connection.
    const refusing = {
      ...failing,
      failedRecently: 0,
      signatureRefused: [
        { connectionId: 'shop', count: 3, lastAt: now - 60_000, lastVerifiedAt: now - 5 * 60_000 },
      ],
    };
    expect(problems(refusing)).toEqual([
      "webhook_signatures_refused: webhook receiver: 3 deliveries to connection shop refused in the last 15 min (the last 1 min ago) for a signature its registered secret does not verify or a timestamp off this machine's clock; the receiver's log says which. If the service signs with another secret, register it again ('ebsync webhooks register shop --secret-stdin'); each change refused is lost once the service stops retrying",
    ]);
    // A delivery verified since the last refusal: the sender has the secret, the refusals were
    // someone else's guesses.
    const [entry] = refusing.signatureRefused;
    expect(
      problems({ ...refusing, signatureRefused: [{ ...entry!, lastVerifiedAt: now - 30_000 }] }),
    ).toEqual([]);
    expect(problems(down)).toEqual([
      "webhook_receiver_down: webhook receiver not running at http://127.0.0.1:8790 (connect ECONNREFUSED 127.0.0.1:8790) while shop has webhooks registered: their deliveries are not received; start it ('ebsync webhooks serve', or 'npm start')",
    ]);
    // Nobody delivers to it, or where it listens is not known here: nothing to say.
    expect(problems({ ...down, registered: [] })).toEqual([]);
    expect(problems(receiverNotRunning(endpoint, PORT_UNKNOWN, ['shop']))).toEqual([]);
  });
});
