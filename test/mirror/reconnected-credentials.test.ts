import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyAuth, createClient, type Client } from '../../api/index.js';
import { driveMirrorPass } from '../helpers/mirror-driver.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

/**
 * A list the service refuses to the credential is settled unread only when the credential is
 * still the connection's: a worker that had not yet seen a reconnect made just before the sync
 * (it checks at most once a second) asks again, with the new credential, and reads the list.
 */
let ts: TestSandbox;
let narrow: Client;
let full: Client;

const clientOf = (key: string): Client =>
  createClient({ baseUrl: ts.sb.baseUrl, auth: apiKeyAuth(key), allowInsecureLoopback: true });

beforeAll(async () => {
  ts = await startTestSandbox({ seed: { leads: 20, events: 5 } });
  narrow = clientOf(ts.sb.admin.createKey({ name: 'narrow', permissions: ['lead_read'] }).key);
  full = clientOf(ts.sb.admin.createKey({ name: 'full' }).key);
}, 60_000);

afterAll(async () => {
  await ts?.close();
});

const appointmentsAtService = (): number =>
  (
    ts.sb.ctx.db
      .prepare(
        `SELECT count(*) AS n FROM records WHERE type = 'appointment' AND business_id = ? AND deleted_at IS NULL`,
      )
      .get(ts.sb.businessId) as { n: number }
  ).n;

describe('a refused list and a reconnect the worker had not seen yet', () => {
  it('asks again with the new credential and reads the list', async () => {
    let current = narrow;
    let asked = 0;
    const pass = await driveMirrorPass({
      client: narrow,
      clientNow: () => current,
      credentialsReplaced: () => {
        asked += 1;
        const replaced = current !== full;
        current = full;
        return Promise.resolve(replaced);
      },
      subjects: ['leads', 'appointments'],
      reachLimit: 10_000,
      per: 100,
    });
    expect(asked).toBe(1);
    const appointments = pass.partitions.appointments;
    expect(appointments?.forbidden).toBeUndefined();
    expect(appointmentsAtService()).toBeGreaterThan(0);
    expect(pass.written.get('appointments')?.size).toBe(appointmentsAtService());
    expect(pass.written.get('leads')?.size).toBe(20);
  }, 60_000);

  it('settles the list unread when the credential is still the connection’s', async () => {
    let asked = 0;
    const pass = await driveMirrorPass({
      client: narrow,
      credentialsReplaced: () => {
        asked += 1;
        return Promise.resolve(false);
      },
      subjects: ['leads', 'appointments'],
      reachLimit: 10_000,
      per: 100,
    });
    expect(asked).toBe(1);
    expect(pass.partitions.appointments?.forbidden).toMatch(/HTTP 403 .*appointment_read/);
    expect(pass.written.get('appointments')?.size ?? 0).toBe(0);
    expect(pass.written.get('leads')?.size).toBe(20);
  }, 60_000);
});
