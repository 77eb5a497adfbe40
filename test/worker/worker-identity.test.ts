import { randomBytes } from 'node:crypto';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  identityKeys,
  keyFingerprint,
  keysApart,
  keysApartLine,
  livePollers,
  workerIdentity,
} from '../../worker/worker-identity.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';

const key = (id: string) => ({ id, key: randomBytes(32) });
const k1 = key('k1');
const k2 = key('k2');
const otherDev = key('dev1');
const dev = key('dev1');

describe('a worker identity', () => {
  it('names each key by its id and a fingerprint, never its bytes', () => {
    const identity = workerIdentity([k2, k1], 42, 'box');
    expect(identity).toMatch(/^ebsync-worker 42@box keys=k2\.[0-9a-f]{8},k1\.[0-9a-f]{8}$/);
    expect(identity).not.toContain(k1.key.toString('base64'));
    expect(identity).not.toContain(k1.key.toString('hex').slice(0, 8));
    expect(identityKeys(identity)).toEqual([keyFingerprint(k2), keyFingerprint(k1)]);
    expect(keyFingerprint(k1)).toBe(keyFingerprint({ id: 'k1', key: Buffer.from(k1.key) }));
    // Two data directories both call their generated key dev1: their bytes tell them apart.
    expect(keyFingerprint(dev)).not.toBe(keyFingerprint(otherDev));
    expect(identityKeys('12345@host')).toBeUndefined();
    expect(identityKeys('ebsync-worker 1@h keys=k1.zz')).toBeUndefined();
  });

  it('tells workers whose payloads the other cannot open from workers in a key rotation', () => {
    const a = workerIdentity([k2, k1], 1, 'a');
    // Mid-rotation: the new key added second everywhere first, then moved first.
    expect(keysApart(a, workerIdentity([k1, k2], 2, 'b'))).toBeUndefined();
    expect(keysApart(a, workerIdentity([k2, k1], 2, 'b'))).toBeUndefined();
    expect(keysApart(a, workerIdentity([k1], 2, 'b'))).toBe(
      "ebsync-worker 1@a seals with key 'k2', which ebsync-worker 2@b lacks",
    );
    expect(keysApart(workerIdentity([dev], 1, 'a'), workerIdentity([otherDev], 2, 'b'))).toBe(
      "ebsync-worker 1@a seals with key 'dev1', which ebsync-worker 2@b holds with other bytes",
    );
    // Pollers that are not ebsync workers (the Temporal CLI, another SDK) are left alone.
    expect(keysApart(a, '777@elsewhere')).toBeUndefined();
    expect(keysApartLine('q', [a, a, '777@elsewhere'])).toBeUndefined();
  });
});

describe('workers of other keys polling one task queue', () => {
  let temporal: TemporalHarness;
  beforeAll(async () => {
    temporal = await connectTemporal();
  });
  afterAll(async () => {
    await temporal?.close();
  });

  /** The line said about the queue while workers with these identities poll it. */
  async function lineWhilePolling(identities: string[]): Promise<string | undefined> {
    const taskQueue = temporal.taskQueue();
    const run = async (rest: string[]): Promise<string | undefined> => {
      const [identity, ...others] = rest;
      if (identity === undefined) {
        const deadline = Date.now() + 30_000;
        let seen: string[] = [];
        while (Date.now() < deadline) {
          seen = await livePollers(temporal.client, 'default', taskQueue);
          if (identities.every((i) => seen.includes(i))) break;
          await new Promise((r) => setTimeout(r, 200));
        }
        expect(seen.sort()).toEqual([...identities].sort());
        return keysApartLine(taskQueue, seen);
      }
      // A connection each: the SDK refuses two workers of one queue on one connection.
      const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
      try {
        return await temporal.withWorker({ taskQueue, activities: {}, identity, connection }, () =>
          run(others),
        );
      } finally {
        await connection.close();
      }
    };
    return run(identities);
  }

  it('are said in one line naming both and what to do; workers of the same keys are not', async () => {
    const line = await lineWhilePolling([
      workerIdentity([k2, k1], 1, 'a'),
      workerIdentity([k1], 2, 'b'),
    ]);
    expect(line).toMatch(
      /^workers on task queue 'test-[^']+' hold different encryption keys \(as they polled in the last 2 minutes[^)]*\): /,
    );
    expect(line).toContain("ebsync-worker 1@a seals with key 'k2', which ebsync-worker 2@b lacks");
    expect(line).toContain('the same EBSYNC_ENCRYPTION_KEYS');
    expect(
      await lineWhilePolling([workerIdentity([k1], 1, 'a'), workerIdentity([k1], 2, 'b')]),
    ).toBeUndefined();
  }, 90_000);
});
