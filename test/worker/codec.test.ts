import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { EncryptionCodec, PayloadDecryptionError } from '../../worker/codec.js';
import { createHealthActivities } from '../../activities/health.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { allPayloads, encodingOf, payloadBytes } from '../helpers/history.js';
import { healthCheckWorkflow } from '../../workflows/health.js';

const k1 = { id: 'k1', key: randomBytes(32) };
const k2 = { id: 'k2', key: randomBytes(32) };
const secretPayload = () =>
  defaultPayloadConverter.toPayload({ refresh_token: 'rt_super_secret', email: 'ana@example.com' });

describe('EncryptionCodec', () => {
  it('seals payloads so no plaintext remains, and opens them again', async () => {
    const codec = new EncryptionCodec([k1]);
    const [sealed] = await codec.encode([secretPayload()]);
    expect(Buffer.from(sealed!.data!).toString('latin1')).not.toContain('rt_super_secret');
    expect(new TextDecoder().decode(sealed!.metadata!['encryption-key-id'])).toBe('k1');
    const [opened] = await codec.decode([sealed!]);
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual({
      refresh_token: 'rt_super_secret',
      email: 'ana@example.com',
    });
  });

  it('reads payloads sealed with an older key after rotation, and seals new ones with the first key', async () => {
    const [old] = await new EncryptionCodec([k1]).encode([secretPayload()]);
    const rotated = new EncryptionCodec([k2, k1]);
    expect(defaultPayloadConverter.fromPayload((await rotated.decode([old!]))[0]!)).toMatchObject({
      email: 'ana@example.com',
    });
    const [fresh] = await rotated.encode([secretPayload()]);
    expect(new TextDecoder().decode(fresh!.metadata!['encryption-key-id'])).toBe('k2');
  });

  it('refuses a payload sealed with an unknown key, or tampered with, with a clear error', async () => {
    const [sealed] = await new EncryptionCodec([k1]).encode([secretPayload()]);
    await expect(new EncryptionCodec([k2]).decode([sealed!])).rejects.toThrow(
      /key 'k1'.*EBSYNC_ENCRYPTION_KEYS/,
    );
    const data = Buffer.from(sealed!.data!);
    data[20] = data[20]! ^ 0xff;
    await expect(new EncryptionCodec([k1]).decode([{ ...sealed!, data }])).rejects.toBeInstanceOf(
      PayloadDecryptionError,
    );
  });

  it('passes through payloads that were never encrypted', async () => {
    const plain = secretPayload();
    expect(await new EncryptionCodec([k1]).decode([plain])).toEqual([plain]);
  });
});

describe('encrypted payloads on a real Temporal server', () => {
  let t: TemporalHarness;
  beforeAll(async () => {
    t = await connectTemporal();
  });
  afterAll(async () => {
    await t.close();
  });

  it('keeps workflow results sealed in history while clients with the key read them', async () => {
    const dataConverter = { payloadCodecs: [new EncryptionCodec([k1])] };
    const client = new Client({ connection: t.connection, dataConverter });
    const taskQueue = t.taskQueue();
    const workflowId = `codec-${taskQueue}`;
    const report = await t.withWorker(
      {
        taskQueue,
        dataConverter,
        activities: createHealthActivities({ version: 'v-sealed-42', startedAt: Date.now() }),
      },
      () =>
        client.workflow.execute(healthCheckWorkflow, {
          taskQueue,
          workflowId,
        }),
    );
    expect(report.worker.version).toBe('v-sealed-42');
    // Read the raw history without the codec: every payload is sealed, none holds the plaintext.
    const raw = await t.client.workflow.getHandle(workflowId).fetchHistory();
    const payloads = allPayloads(raw);
    expect(payloads.length).toBeGreaterThanOrEqual(2);
    expect(new Set(payloads.map(encodingOf))).toEqual(new Set(['binary/encrypted']));
    expect(payloadBytes(raw).includes('v-sealed-42')).toBe(false);
    // The same search finds the marker when the codec is left out: the check can fail.
    const plainQueue = t.taskQueue();
    await t.withWorker(
      {
        taskQueue: plainQueue,
        activities: createHealthActivities({ version: 'v-sealed-42', startedAt: Date.now() }),
      },
      () =>
        t.client.workflow.execute(healthCheckWorkflow, {
          taskQueue: plainQueue,
          workflowId: `plain-${plainQueue}`,
        }),
    );
    const plain = await t.client.workflow.getHandle(`plain-${plainQueue}`).fetchHistory();
    expect(payloadBytes(plain).includes('v-sealed-42')).toBe(true);
  });
});
