import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteAutomationStore } from '../../store/automation-endpoints.js';
import { loadConfig } from '../../config/index.js';
import { EncryptionCodec } from '../../worker/codec.js';
import { dataConverter } from '../../worker/data-converter.js';
import { runCli } from '../helpers/cli.js';
import { endpointAt, forwardOnce } from '../helpers/forward.js';

/**
 * Production sends changes (customer records) over HTTPS only (issue 30, item 12): a plain
 * http:// automation endpoint is refused when added, and one added in development is shown
 * refused, with the reason, when a production worker or CLI opens the endpoints; nothing is
 * sent to it. Reading stores nothing: it disabled the endpoint for good, development too.
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

  it('refuses an endpoint name a connection could not have, with the same rule in words', async () => {
    const result = await runCli(
      ['webhooks', 'endpoints', 'add', '_crm', 'https://hooks.example/x'],
      {
        EBSYNC_DATA_DIR: join(dir, 'cli'),
        EBSYNC_ENCRYPTION_KEYS: KEYS,
      },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "ebsync: endpoint name '_crm' is not allowed: expected 1-63 lowercase letters, digits, '-' or '_', the first a letter or digit\n",
    );
    // The commands that name one refuse it alike: exit 2, not 1 as for one that is missing.
    for (const [args, flag] of [
      [['webhooks', 'endpoints', 'remove', 'BAD!'], "endpoint name 'BAD!'"],
      [['webhooks', 'endpoints', 'enable', 'BAD!'], "endpoint name 'BAD!'"],
      [['webhooks', 'deliveries', '--endpoint', 'BAD!'], "--endpoint 'BAD!'"],
    ] as const) {
      const refused = await runCli([...args], {
        EBSYNC_DATA_DIR: join(dir, 'cli'),
        EBSYNC_ENCRYPTION_KEYS: KEYS,
      });
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr).toBe(
        `ebsync: ${flag} is not allowed: expected 1-63 lowercase letters, digits, '-' or '_', the first a letter or digit\n`,
      );
    }
  });

  it('refuses to add an endpoint under a name taken, exit 1 as for a schedule that exists', async () => {
    const env = { EBSYNC_DATA_DIR: join(dir, 'cli-dup'), EBSYNC_ENCRYPTION_KEYS: KEYS };
    const add = ['webhooks', 'endpoints', 'add', 'dup', 'https://hooks.example/x'];
    expect((await runCli(add, env)).code).toBe(0);
    const again = await runCli(add, env);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      "ebsync: endpoint 'dup' exists: 'ebsync webhooks endpoints enable dup' resumes a disabled one, 'ebsync webhooks endpoints remove dup' first to add it anew\n",
    );
  });

  it('sends nothing to one added in development, and stores nothing: development sends again', async () => {
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
      expect(listed?.disabledAt).toBeNull();
      expect(listed?.refusedReason).toBe(
        'plain http:// is refused in production mode, even on loopback; add it again with https://',
      );
    } finally {
      production.close();
    }
    // Read in production, it was disabled for good (only remove and add, a new secret, undid it).
    const again = sqliteAutomationStore(file, codec);
    try {
      const [listed] = await again.list();
      expect(listed?.disabledAt).toBeNull();
      expect(listed?.refusedReason).toBeUndefined();
      expect(await forwardOnce(again, 'w-https-2')).toEqual({ delivered: 1, refused: 0 });
      expect(received).toBe(1);
    } finally {
      again.close();
    }
  });

  it('list and enable in production change nothing; enable in development resumes one an earlier version disabled', async () => {
    const dataDir = join(dir, 'cli-modes');
    const development = { EBSYNC_DATA_DIR: dataDir };
    const added = await runCli(['webhooks', 'endpoints', 'add', 'h1', hookUrl], development);
    expect(added.code, added.stderr).toBe(0);
    const production = {
      ...development,
      EBSYNC_MODE: 'production',
      EBSYNC_ENCRYPTION_KEYS: readFileSync(join(dataDir, 'encryption-keys'), 'utf8').trim(),
    };
    const reason =
      'plain http:// is refused in production mode, even on loopback; add it again with https://';

    const listed = await runCli(['webhooks', 'endpoints', 'list', '--json'], production);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([
      { name: 'h1', state: 'refused', disabledReason: reason },
    ]);
    const enabled = await runCli(['webhooks', 'endpoints', 'enable', 'h1'], production);
    expect(enabled.code).toBe(2);
    expect(enabled.stderr).toBe(`ebsync: endpoint 'h1' stays refused: ${reason}\n`);

    // Back in development the endpoint is as it was added.
    const back = await runCli(['webhooks', 'endpoints', 'list'], development);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toMatch(/^h1 {2}http:\/\/127\.0\.0\.1:\d+\/… {2}active {2}/);

    // A file an earlier version left with the endpoint disabled for that reason recovers.
    const codec = dataConverter(loadConfig(development)).payloadCodecs?.[0];
    if (!codec) throw new Error('no codec');
    const store = sqliteAutomationStore(join(dataDir, 'webhooks.db'), codec);
    store.disable('h1', reason);
    store.close();
    const resumed = await runCli(['webhooks', 'endpoints', 'enable', 'h1'], development);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`enabled endpoint h1 (was: ${reason})`);
    const after = await runCli(['webhooks', 'endpoints', 'list', '--json'], development);
    expect(JSON.parse(after.stdout)).toMatchObject([
      { name: 'h1', state: 'active', disabledReason: null },
    ]);
  });
});
