import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteAutomationStore } from '../../store/automation-endpoints.js';
import { EncryptionCodec } from '../../worker/codec.js';
import { runCli } from '../helpers/cli.js';
import { endpointAt, forwardOnce } from '../helpers/forward.js';

/**
 * Production sends changes (customer records) over HTTPS only (issue 30, item 12): a plain
 * http:// automation endpoint is refused when added, and one added in development is disabled,
 * with the reason, when a production worker or CLI opens the endpoints; nothing is sent to it.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-automation-https-'));
const KEYS = `k1:${Buffer.alloc(32, 3).toString('base64')}`;
let hook: Server;
let hookUrl: string;
let received = 0;

beforeAll(async () => {
  hook = createServer((req, res) => {
    received += 1;
    req.resume().on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  const address = hook.address();
  hookUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
});
afterAll(async () => {
  await new Promise((r) => hook.close(r));
  rmSync(dir, { recursive: true, force: true });
});

describe('automation endpoints in production', () => {
  it('refuses to add a plain http:// endpoint, in one line', async () => {
    const result = await runCli(['webhooks', 'endpoints', 'add', 'crm', 'http://hooks.example/x'], {
      EBSYNC_DATA_DIR: join(dir, 'cli'),
      EBSYNC_MODE: 'production',
      EBSYNC_ENCRYPTION_KEYS: KEYS,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "ebsync: url 'http://hooks.example/…' is not allowed: plain http:// is refused in production mode, even on loopback; use https://\n",
    );
  });

  it('disables one added in development, with the reason, and sends it nothing', async () => {
    const codec = new EncryptionCodec([{ id: 'k1', key: randomBytes(32) }]);
    const file = join(dir, 'webhooks.db');
    const development = sqliteAutomationStore(file, codec);
    await development.add(endpointAt('local-hook', hookUrl));
    development.close();

    const production = sqliteAutomationStore(file, codec, { httpsOnly: true });
    try {
      const result = await forwardOnce(production, 'w-https-1');
      expect(result).toEqual({ delivered: 0, refused: 0 });
      expect(received).toBe(0);
      const [listed] = await production.list();
      expect(listed?.disabledReason).toBe(
        'plain http:// is refused in production mode, even on loopback; add it again with https://',
      );
    } finally {
      production.close();
    }
  });
});
