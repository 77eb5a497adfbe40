import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAutomationActivities,
  GONE_BEFORE_SENT,
} from '../../activities/automations/forward-change.js';
import { endpointViews } from '../../cli/webhook-automations.js';
import { sqliteAutomationStore, type AutomationStore } from '../../store/automation-endpoints.js';
import type { Inbox, OwedChange } from '../../store/inbox.js';
import { openInbox } from '../../store/open-inbox.js';
import { sealValue } from '../../store/sealed-values.js';
import { EncryptionCodec } from '../../worker/codec.js';
import { generateKeyLine } from '../../worker/data-converter.js';
import { endpointAt } from '../helpers/forward.js';

/**
 * Which endpoints a change is owed, and what the delivery log says of them. Found by a
 * black-box sweep: a retry sent changes to endpoints added after them; after an endpoint
 * answered 410 the next change of the same batch still went to it; and each endpoint's log
 * said the activity's attempt (7) for the one request it got.
 */
let dir: string;
let store: AutomationStore;
let inbox: Inbox;
const servers: Server[] = [];
const [keyId, keyText] = generateKeyLine('owed').split(':') as [string, string];
const codec = new EncryptionCodec([{ id: keyId, key: Buffer.from(keyText, 'base64') }]);

/** An endpoint's server: answers `status` and counts the requests by webhook-id. */
async function hook(status: number): Promise<{ url: string; got: string[] }> {
  const got: string[] = [];
  const server = createServer((request, response) => {
    got.push(String(request.headers['webhook-id']));
    request.resume();
    request.on('end', () => response.writeHead(status).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/in`, got };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-owed-'));
  store = sqliteAutomationStore(join(dir, 'webhooks.db'), codec);
  inbox = await openInbox(`sqlite:${join(dir, 'store.db')}`);
});

afterAll(async () => {
  for (const server of servers) server.close();
  store?.close();
  await inbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The forwarding of one drain batch, as attempt `attempt` of its activity. */
function forwardBatch(batchKey: string, attempt: number) {
  const activities = createAutomationActivities(store, undefined, {
    inbox: () => Promise.resolve(inbox),
    codec,
  });
  const env = new MockActivityEnvironment({ attempt }, { logger: new DefaultLogger('ERROR') });
  return env.run(
    (input: { connectionId: string; batchKey: string }) => activities.forwardChanges(input),
    { connectionId: 'shop', batchKey },
  );
}

async function keep(batchKey: string, ids: string[], appliedAt: Date): Promise<void> {
  const changes: OwedChange[] = [];
  for (const recordId of ids) {
    changes.push({
      connectionId: 'shop',
      batchKey,
      resource: 'leads',
      recordId,
      action: 'written',
      sealed: await sealValue(codec, { id: recordId }),
      appliedAt,
    });
  }
  await inbox.keepChanges(changes);
}

describe('changes owed to automation endpoints', () => {
  it('go to the endpoints there when they were applied, a gone one no more, each request counted once', async () => {
    const early = await hook(200);
    const gone = await hook(410);
    await store.add({ ...endpointAt('early', early.url), createdAt: '2026-01-01T00:00:00.000Z' });
    await store.add({ ...endpointAt('gone', gone.url), createdAt: '2026-01-01T00:00:00.000Z' });
    await keep('b1', ['1', '2', '3'], new Date('2026-06-01T00:00:00.000Z'));
    // An endpoint added after the changes were applied, before they are forwarded (as while
    // another endpoint's failures held them).
    const late = await hook(200);
    await store.add({ ...endpointAt('late', late.url), createdAt: '2026-06-01T00:00:01.000Z' });

    // The seventh attempt of the activity: the first request any endpoint gets here.
    const sent = await forwardBatch('b1', 7);
    expect(early.got).toHaveLength(3);
    expect(late.got).toEqual([]);
    // 410 for the first change disables it: the other two are not sent to it, and the log
    // says they were given up (it said nothing of them, as if they had never been owed).
    expect(gone.got).toHaveLength(1);
    expect(sent).toEqual({ delivered: 3, refused: 3 });
    const log = store.deliveries({ limit: 100 });
    expect(log.filter((e) => e.endpoint === 'late')).toEqual([]);
    expect(
      log
        .filter((e) => e.endpoint === 'gone')
        .map((e) => [e.status, e.httpStatus, e.attempts, e.reason])
        .sort((a, b) => Number(b[2]) - Number(a[2])),
    ).toEqual([
      ['gone', 410, 1, null],
      ['gone', null, 0, GONE_BEFORE_SENT],
      ['gone', null, 0, GONE_BEFORE_SENT],
    ]);
    expect(new Set(log.filter((e) => e.endpoint === 'early').map((e) => e.attempts))).toEqual(
      new Set([1]),
    );
    // Everything owed was taken or refused for good: nothing is left to send.
    expect(await inbox.owedChanges('shop', 'b1')).toEqual([]);
  });

  it("count an endpoint's own requests for a change across attempts, not the activity's", async () => {
    let answer = 503;
    const flaky = { got: [] as string[], url: '' };
    const server = createServer((request, response) => {
      flaky.got.push(String(request.headers['webhook-id']));
      request.resume();
      request.on('end', () => response.writeHead(answer).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    flaky.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/in`;
    await store.add({ ...endpointAt('flaky', flaky.url), createdAt: '2026-01-01T00:00:00.000Z' });
    await keep('b2', ['9'], new Date('2026-06-02T00:00:00.000Z'));
    // Attempts 5 and 6 of the activity (retried before for other endpoints): this endpoint's
    // first and second request for the change.
    await expect(forwardBatch('b2', 5)).rejects.toThrow(/not reached yet: flaky/);
    answer = 200;
    await forwardBatch('b2', 6);
    const mine = store
      .deliveries({ limit: 100 })
      .filter((e) => e.endpoint === 'flaky' && e.recordId === '9');
    expect(mine.map((e) => [e.status, e.attempts])).toEqual([['delivered', 2]]);
    expect(flaky.got).toHaveLength(2);
  });

  it('go on to the other endpoints when one was sealed with keys this worker does not have', async () => {
    // Added from a shell with other EBSYNC_ENCRYPTION_KEYS: reading it threw, and with it
    // every drain batch and forwarding of the data dir.
    const [otherId, otherText] = generateKeyLine('other').split(':') as [string, string];
    const otherCodec = new EncryptionCodec([
      { id: otherId, key: Buffer.from(otherText, 'base64') },
    ]);
    const foreign = await hook(200);
    const other = sqliteAutomationStore(join(dir, 'webhooks.db'), otherCodec);
    await other.add({
      ...endpointAt('foreign', foreign.url),
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    other.close();
    const fine = await hook(200);
    await store.add({ ...endpointAt('fine', fine.url), createdAt: '2026-01-01T00:00:00.000Z' });
    await keep('b3', ['21'], new Date('2026-06-03T00:00:00.000Z'));

    await forwardBatch('b3', 1);
    expect(fine.got).toEqual(['msg_b3_leads_21']);
    expect(foreign.got).toEqual([]);
    const listed = (await store.list()).find((e) => e.name === 'foreign');
    expect(listed?.url).toBe('');
    expect(listed?.unreadable).toMatch(new RegExp(`key '${otherId}'`));
    // What `endpoints list` and the status show of it (they failed on its empty URL).
    const view = (await endpointViews(store)).find((e) => e.name === 'foreign');
    expect(view).toMatchObject({ url: '(sealed)', state: 'unreadable' });
  });

  it('are given up, and logged so, when the endpoint answered 410 to another batch after they were applied', async () => {
    const laterGone = await hook(410);
    await store.add({
      ...endpointAt('later-gone', laterGone.url),
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    const applied = new Date(Date.now() - 60_000);
    await keep('b4', ['31'], applied);
    await keep('b5', ['32'], applied);
    await forwardBatch('b4', 1);
    await forwardBatch('b5', 1);
    expect(laterGone.got).toEqual(['msg_b4_leads_31']);
    const mine = store.deliveries({ endpoint: 'later-gone', limit: 10 });
    expect(mine.map((e) => [e.recordId, e.status, e.httpStatus, e.attempts, e.reason])).toEqual(
      expect.arrayContaining([
        ['31', 'gone', 410, 1, null],
        ['32', 'gone', null, 0, GONE_BEFORE_SENT],
      ]),
    );
    expect(mine).toHaveLength(2);
    expect(await inbox.owedChanges('shop', 'b5')).toEqual([]);
  });

  // Its heartbeat timed out (Temporal away 30 s, a slow chain of redirects) while its worker
  // lived on: Temporal retries it elsewhere, and this attempt sending on would deliver twice.
  it('stop at once when their attempt is cancelled: the request in flight aborted, nothing logged', async () => {
    let arrived: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    // Takes the request and never answers.
    const held = createServer((request) => {
      request.resume();
      arrived();
    });
    await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
    servers.push(held);
    const url = `http://127.0.0.1:${(held.address() as AddressInfo).port}/in`;
    await store.add({ ...endpointAt('held', url), createdAt: '2026-01-01T00:00:00.000Z' });
    await keep('b6', ['6'], new Date('2026-06-01T00:00:00.000Z'));
    const activities = createAutomationActivities(store, undefined, {
      inbox: () => Promise.resolve(inbox),
      codec,
    });
    const env = new MockActivityEnvironment({ attempt: 1 }, { logger: new DefaultLogger('ERROR') });
    const run = env.run(
      (input: { connectionId: string; batchKey: string }) => activities.forwardChanges(input),
      { connectionId: 'shop', batchKey: 'b6' },
    );
    const outcome = run.then(
      () => 'completed',
      (error: unknown) => (error as Error).name,
    );
    await reached;
    const at = Date.now();
    env.cancel('TIMED_OUT');
    expect(await outcome).toBe('CancelledFailure');
    // Well before the request's own 10 s timeout, which would have logged it failed.
    expect(Date.now() - at).toBeLessThan(5_000);
    expect(store.deliveries({ limit: 100 }).filter((e) => e.endpoint === 'held')).toEqual([]);
    store.remove('held');
  });
});
