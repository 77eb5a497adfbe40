import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ebsync-webhooks-cli-'));
const env = { EBSYNC_DATA_DIR: dir };

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Bad input to the webhook commands: one line naming what is wrong, exit 2, nothing stored. */
describe('ebsync webhooks, bad input', () => {
  it.each([
    [
      ['webhooks', 'register', 'Bad Name', '--secret-stdin'],
      /connection 'Bad Name' is not allowed/,
    ],
    [['webhooks', 'register', 'shop'], /--sandbox-admin URL .* or --secret-stdin/],
    [
      ['webhooks', 'register', 'shop', '--sandbox-admin', 'https://x/admin'],
      /needs the sandbox's admin token: set EBS_SANDBOX_ADMIN_TOKEN, or pass --admin-token -/,
    ],
    [
      ['webhooks', 'register', 'shop', '--url', 'ftp://x', '--secret-stdin'],
      /--url='ftp:\/\/x' is not allowed/,
    ],
    [['webhooks', 'serve', '--port', '70000'], /Expected a whole number from 0 to 65535/],
  ])('ebsync %j', async (args, message) => {
    const result = await runCli(args, env);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });

  it('refuses unsigned deliveries outside development in one line', async () => {
    const result = await runCli(['webhooks', 'serve'], {
      ...env,
      EBSYNC_MODE: 'production',
      EBSYNC_WEBHOOK_ALLOW_UNSIGNED: 'true',
      EBSYNC_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/EBSYNC_WEBHOOK_ALLOW_UNSIGNED.*only in development/);
  });
});
