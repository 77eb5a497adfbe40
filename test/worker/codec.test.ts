import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import proto from '@temporalio/proto';
import { ConfigError, loadConfig } from '../../config/index.js';
import { dataConverter } from '../../worker/data-converter.js';
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
    // The same key id with other bytes: a command run with another data dir's dev keys.
    await expect(
      new EncryptionCodec([{ id: 'k1', key: k2.key }]).decode([sealed!]),
    ).rejects.toThrow(
      /failed authentication with key 'k1'.*give this command the worker's keys \(EBSYNC_ENCRYPTION_KEYS.*EBSYNC_DATA_DIR/,
    );
    // A worker handed a workflow that other keys sealed is told so, not to ask a worker.
    await expect(
      new EncryptionCodec([{ id: 'k1', key: k2.key }], { holder: 'worker' }).decode([sealed!]),
    ).rejects.toThrow(
      /failed authentication with key 'k1'.*it was started by an ebsync with other keys .*: give this worker those keys too, or end the workflows whose keys are gone/,
    );
    const data = Buffer.from(sealed!.data!);
    data[20] = data[20]! ^ 0xff;
    await expect(new EncryptionCodec([k1]).decode([{ ...sealed!, data }])).rejects.toBeInstanceOf(
      PayloadDecryptionError,
    );
  });

  it('passes payloads that were never encrypted through only when told to (development)', async () => {
    const plain = secretPayload();
    expect(await new EncryptionCodec([k1], { acceptPlaintext: true }).decode([plain])).toEqual([
      plain,
    ]);
    await expect(new EncryptionCodec([k1]).decode([plain])).rejects.toThrow(
      /not encrypted.*EBSYNC_ENCRYPTION_KEYS/,
    );
  });

  it('refuses plain payloads in production mode, passes them in development', async () => {
    const keys = `k1:${k1.key.toString('base64')}`;
    const production = dataConverter(
      loadConfig({ EBSYNC_MODE: 'production', EBSYNC_ENCRYPTION_KEYS: keys }),
    ).payloadCodecs?.[0];
    const development = dataConverter(loadConfig({ EBSYNC_ENCRYPTION_KEYS: keys }))
      .payloadCodecs?.[0];
    const plain = secretPayload();
    const error = await production?.decode([plain]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PayloadDecryptionError);
    expect(String(error)).not.toContain('rt_super_secret');
    expect(await development?.decode([plain])).toEqual([plain]);
  });

  it("a payload of another data dir's key says which key file this command read, and that it just made it", async () => {
    const worker = mkdtempSync(join(tmpdir(), 'ebsync-keys-worker-'));
    const other = mkdtempSync(join(tmpdir(), 'ebsync-keys-other-'));
    try {
      const sealing = dataConverter(loadConfig({ EBSYNC_DATA_DIR: worker })).payloadCodecs![0]!;
      const [sealed] = await sealing.encode([secretPayload()]);
      const opening = () =>
        dataConverter(loadConfig({ EBSYNC_DATA_DIR: other })).payloadCodecs![0]!;
      const file = join(other, 'encryption-keys');
      const first = String(
        await opening()
          .decode([sealed!])
          .catch((e: unknown) => e),
      );
      expect(first).toContain(`this one's keys are in ${file}, made by this command`);
      expect(first).not.toContain('rt_super_secret');
      // The file is kept: the next command reads it and does not say it made it.
      const again = String(
        await opening()
          .decode([sealed!])
          .catch((e: unknown) => e),
      );
      expect(again).toContain(`this one's keys are in ${file} (EBSYNC_DATA_DIR)`);
      // The worker's own dir opens it.
      const own = dataConverter(loadConfig({ EBSYNC_DATA_DIR: worker })).payloadCodecs![0]!;
      expect(defaultPayloadConverter.fromPayload((await own.decode([sealed!]))[0]!)).toMatchObject({
        email: 'ana@example.com',
      });
    } finally {
      rmSync(worker, { recursive: true, force: true });
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('binds the ciphertext to its key id: relabelled, or stripped of its format, it does not open', async () => {
    // Two ids for the same key bytes: only the authenticated key id tells them apart.
    const twin = { id: 'k1-copy', key: k1.key };
    const codec = new EncryptionCodec([k1, twin]);
    const [sealed] = await codec.encode([secretPayload()]);
    const relabelled = {
      ...sealed!,
      metadata: { ...sealed!.metadata, 'encryption-key-id': new TextEncoder().encode('k1-copy') },
    };
    await expect(codec.decode([relabelled])).rejects.toBeInstanceOf(PayloadDecryptionError);
    const withoutFormat = { ...sealed!.metadata };
    delete withoutFormat['encryption-format'];
    await expect(codec.decode([{ ...sealed!, metadata: withoutFormat }])).rejects.toBeInstanceOf(
      PayloadDecryptionError,
    );
    expect(defaultPayloadConverter.fromPayload((await codec.decode([sealed!]))[0]!)).toMatchObject({
      email: 'ana@example.com',
    });
  });

  it('still opens payloads sealed before the key id was bound (no format field)', async () => {
    const [legacy] = sealWithoutKeyIdBinding(secretPayload(), k1);
    const opened = await new EncryptionCodec([k2, k1]).decode([legacy!]);
    expect(defaultPayloadConverter.fromPayload(opened[0]!)).toMatchObject({
      refresh_token: 'rt_super_secret',
    });
  });

  it('refuses two keys with the same id, in the codec and when the setting loads', () => {
    expect(() => new EncryptionCodec([k1, { id: 'k1', key: k2.key }])).toThrow(/'k1'.*twice/);
    const setting = `k1:${k1.key.toString('base64')},k1:${k2.key.toString('base64')}`;
    let error: unknown;
    try {
      loadConfig({ EBSYNC_ENCRYPTION_KEYS: setting });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).lines).toEqual([
      `EBSYNC_ENCRYPTION_KEYS='****(${setting.length} chars)' is not allowed: key id 'k1' appears twice; each key needs its own id`,
    ]);
  });
});

/** The sealing of ebsync before key ids were authenticated: AES-256-GCM, no additional data. */
function sealWithoutKeyIdBinding(payload: Payload, key: { id: string; key: Buffer }): Payload[] {
  const plain = proto.temporal.api.common.v1.Payload.encode(payload).finish();
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  const text = new TextEncoder();
  return [
    {
      metadata: {
        encoding: text.encode('binary/encrypted'),
        'encryption-key-id': text.encode(key.id),
      },
      data,
    },
  ];
}

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
