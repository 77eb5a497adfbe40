import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config/index.js';
import { webhookRegistrations } from '../../worker/webhook-receiver.js';
import type { HmacScheme } from '../../config/schema.js';
import { SignatureError, signingSecretProblem, verifySignature } from '../../webhooks/signature.js';
import { runCli } from '../helpers/cli.js';
import { standInConnection } from '../helpers/temporal.js';
import { newSecret } from './deliveries.js';

/**
 * The signature schemes' own rules (issue 30, items 4 and 5): an HMAC header scheme signs its
 * timestamp and, when the id comes from a header, the id too, so a captured delivery cannot be
 * replayed under a new id or a new time; a signing secret that cannot sign is refused where it
 * is given, not answered 503 at every delivery.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-signature-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SCHEME: HmacScheme = {
  header: 'x-signature',
  algorithm: 'sha256',
  encoding: 'hex',
  prefix: 'sha256=',
  timestampHeader: 'x-timestamp',
  idHeader: 'x-delivery-id',
};
const SECRET = newSecret();
const KEY = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
const BODY = Buffer.from(JSON.stringify({ id: 'evt_1', data: { record_type: 'lead', id: '1' } }));

function signed(signedText: string, id: string, at: number): Record<string, string> {
  const mac = createHmac('sha256', KEY).update(signedText).digest('hex');
  return { 'x-signature': `sha256=${mac}`, 'x-timestamp': String(at), 'x-delivery-id': id };
}

function without<T extends object>(value: T, name: string): T {
  return Object.fromEntries(Object.entries(value).filter(([key]) => key !== name)) as T;
}

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SignatureError);
    // The receiver tells the two apart by kind, never by the words.
    const { kind, message } = error as SignatureError;
    expect(kind).toBe(
      message === 'the signature does not match the body'
        ? 'mismatch'
        : message.endsWith(' header is missing')
          ? 'missing'
          : 'malformed',
    );
    return message;
  }
  throw new Error('expected a SignatureError');
}

describe('Standard Webhooks', () => {
  const now = Math.floor(Date.now() / 1000);
  const standard = (id: string, body: Buffer, entries: (mac: string) => string) => ({
    'webhook-id': id,
    'webhook-timestamp': String(now),
    'webhook-signature': entries(
      createHmac('sha256', KEY)
        .update(Buffer.concat([Buffer.from(`${id}.${now}.`), body]))
        .digest('base64'),
    ),
  });

  it('verifies what the standardwebhooks package signs, among other versions and keys', () => {
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(now),
      'webhook-signature': new Webhook(SECRET).sign('msg_1', new Date(now * 1000), BODY.toString()),
    };
    expect(verifySignature('standard', SECRET, headers, BODY)).toBe('msg_1');
    const several = standard('msg_2', BODY, (mac) => `v2,${mac} v1,bm90IGl0 v1,${mac}`);
    expect(verifySignature('standard', SECRET, several, BODY)).toBe('msg_2');
    const otherVersion = standard('msg_3', BODY, (mac) => `v2,${mac}`);
    expect(refusal(() => verifySignature('standard', SECRET, otherVersion, BODY))).toBe(
      'the signature does not match the body',
    );
  });

  it('checks the signature on the bytes as sent, UTF-8 or not', () => {
    // 0xe9 alone is Latin-1 é, not UTF-8: decoded as text it would become U+FFFD.
    const body = Buffer.concat([
      Buffer.from('{"id":"evt_b","note":"caf'),
      Buffer.from([0xe9]),
      Buffer.from('"}'),
    ]);
    const headers = standard('msg_b', body, (mac) => `v1,${mac}`);
    expect(verifySignature('standard', SECRET, headers, body)).toBe('msg_b');
    // A signature over the text the bytes decode to does not cover these bytes.
    const overText = standard('msg_b', Buffer.from(body.toString('utf8')), (mac) => `v1,${mac}`);
    expect(refusal(() => verifySignature('standard', SECRET, overText, body))).toBe(
      'the signature does not match the body',
    );
  });
});

describe('an HMAC header scheme', () => {
  const now = Math.floor(Date.now() / 1000);

  it('signs the id header with the timestamp and the body', () => {
    const headers = signed(`d-1.${now}.${BODY.toString()}`, 'd-1', now);
    expect(verifySignature(SCHEME, SECRET, headers, BODY)).toBe('d-1');
  });

  it('refuses a captured delivery replayed under a new id', () => {
    const captured = signed(`d-1.${now}.${BODY.toString()}`, 'd-1', now);
    expect(
      refusal(() => verifySignature(SCHEME, SECRET, { ...captured, 'x-delivery-id': 'd-2' }, BODY)),
    ).toBe('the signature does not match the body');
  });

  it('refuses a signature over the timestamp and body alone when the id is a header', () => {
    const unsignedId = signed(`${now}.${BODY.toString()}`, 'd-1', now);
    expect(refusal(() => verifySignature(SCHEME, SECRET, unsignedId, BODY))).toBe(
      'the signature does not match the body',
    );
  });

  it('refuses a delivery without its timestamp or id header', () => {
    const headers = signed(`d-1.${now}.${BODY.toString()}`, 'd-1', now);
    const noTime = without(headers, 'x-timestamp');
    const noId = without(headers, 'x-delivery-id');
    expect(refusal(() => verifySignature(SCHEME, SECRET, noTime, BODY))).toBe(
      'the x-timestamp header is missing',
    );
    expect(refusal(() => verifySignature(SCHEME, SECRET, noId, BODY))).toBe(
      'the x-delivery-id header is missing',
    );
  });

  it('without an id header, signs the timestamp and the body, whose id is the dedupe key', () => {
    const bodyId = without(SCHEME, 'idHeader');
    const headers = signed(`${now}.${BODY.toString()}`, 'ignored', now);
    expect(verifySignature(bodyId, SECRET, headers, BODY)).toBeUndefined();
    const old = now - 3600;
    expect(
      refusal(() =>
        verifySignature(bodyId, SECRET, signed(`${old}.${BODY.toString()}`, 'x', old), BODY),
      ),
    ).toMatch(/more than 5 minutes from this machine's clock/);
  });

  it('is refused by the configuration without a timestamp header, in one line', () => {
    let thrown: unknown;
    try {
      loadConfig({
        EBSYNC_DATA_DIR: dir,
        EBSYNC_WEBHOOK_SIGNATURE: JSON.stringify({ header: 'x-signature', idHeader: 'x-id' }),
      });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    const lines = (thrown as ConfigError).lines;
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^EBSYNC_WEBHOOK_SIGNATURE=.* needs "timestampHeader"/);
  });
});

describe('signing secrets', () => {
  const notBase64 = 'whsec_not*base64!at#all';
  it.each([
    ['standard', notBase64, /whsec_ followed by the base64 of at least 16 bytes/],
    ['standard', 'whsec_', /whsec_ followed by the base64 of at least 16 bytes/],
    ['standard', `whsec_${randomBytes(8).toString('base64')}`, /at least 16 bytes/],
    ['standard', 'plain-text-secret-long-enough', /whsec_ followed by the base64/],
    ['hmac', notBase64, /whsec_ followed by the base64 of at least 16 bytes/],
    ['hmac', 'short', /at least 16 characters/],
  ] as const)('%s refuses %j', (scheme, secret, problem) => {
    expect(signingSecretProblem(scheme === 'standard' ? 'standard' : SCHEME, secret)).toMatch(
      problem,
    );
  });

  it.each([
    ['standard', newSecret()],
    ['hmac', newSecret()],
    ['hmac', 'a-plain-shared-secret-of-some-length'],
  ] as const)('%s takes %j', (scheme, secret) => {
    expect(signingSecretProblem(scheme === 'standard' ? 'standard' : SCHEME, secret)).toBe(
      undefined,
    );
  });

  it('are refused by `webhooks register` in one line, and nothing is stored', async () => {
    const env = { EBSYNC_DATA_DIR: dir, TEMPORAL_ADDRESS: inject('temporalAddress') };
    const result = await runCli(
      ['webhooks', 'register', 'sig-shop', '--secret-stdin'],
      env,
      60_000,
      `${notBase64}\n`,
    );
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(
      /the signing secret on stdin is not allowed: .*whsec_ followed by the base64/,
    );
    // A good secret is registered, for a connection that exists.
    const stop = await standInConnection('sig-shop');
    const good = await runCli(
      ['webhooks', 'register', 'sig-shop', '--secret-stdin'],
      env,
      60_000,
      `${newSecret()}\n`,
    ).finally(stop);
    expect(good.stderr).toBe('');
    expect(good.code).toBe(0);
  });

  it('that were stored before are refused when the receiver starts, in one line', async () => {
    const own = mkdtempSync(join(dir, 'serve-'));
    const registrations = webhookRegistrations(loadConfig({ EBSYNC_DATA_DIR: own }));
    await registrations.put('old-shop', {
      secret: notBase64,
      destination: `sqlite:${join(own, 'mirror.db')}`,
      url: 'http://127.0.0.1:8790/webhooks/old-shop',
      endpointId: null,
      registeredAt: new Date().toISOString(),
    });
    registrations.close();
    const result = await runCli(
      ['webhooks', 'serve', '--port', '0'],
      { EBSYNC_DATA_DIR: own },
      30_000,
    );
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(
      /connection 'old-shop' has a signing secret .* cannot use .*: run 'ebsync webhooks register old-shop' again/,
    );
  });
});
