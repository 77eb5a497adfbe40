import { defaultPayloadConverter, type PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;

/**
 * Values kept on disk sealed exactly as Temporal payloads are (the payload codec: AES-256-GCM
 * under EBSYNC_ENCRYPTION_KEYS), so one key rotation covers history and local files alike.
 */
export async function sealValue(codec: PayloadCodec, value: unknown): Promise<Buffer> {
  const [sealed] = await codec.encode([defaultPayloadConverter.toPayload(value)]);
  if (!sealed) throw new Error('codec returned no payload');
  return Buffer.from(temporal.api.common.v1.Payload.encode(sealed).finish());
}

export async function openValue<T>(codec: PayloadCodec, bytes: Buffer): Promise<T | undefined> {
  const [payload] = await codec.decode([temporal.api.common.v1.Payload.decode(bytes)]);
  return payload ? defaultPayloadConverter.fromPayload<T>(payload) : undefined;
}
