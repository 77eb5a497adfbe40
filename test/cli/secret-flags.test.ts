import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { CliProcess, runCli } from '../helpers/cli.js';
import { closedPort } from '../helpers/ports.js';
import { standInConnection } from '../helpers/temporal.js';

/**
 * Secrets on the command line show in `ps` and in shell history (issue 30, item 11): every
 * secret flag also takes its secret from a setting or from standard input (`-`), and a value
 * typed after the flag still works but is warned about in one line that names the safer ways
 * and never the secret.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-secret-flags-'));
let sb: Sandbox;
let temporal: string;

beforeAll(async () => {
  sb = await startSandbox({ http: true });
  temporal = `127.0.0.1:${await closedPort()}`;
});
afterAll(async () => {
  await sb?.close();
  rmSync(dir, { recursive: true, force: true });
});

const KEY = 'ik_secret_flags_test_key_0123';

describe('ebsync connect --api-key', () => {
  // Temporal is not there: the command fails after it has its key, so the key's way is seen.
  const env = (): Record<string, string> => ({
    EBSYNC_DATA_DIR: join(dir, 'connect'),
    TEMPORAL_ADDRESS: temporal,
    EBS_BASE_URL: sb.baseUrl,
    EBS_ALLOW_HTTP: 'true',
  });

  it('warns in one line when the key is typed after the flag, never showing it', async () => {
    const result = await runCli(['connect', '--name', 'x', '--api-key', KEY], env(), 60_000);
    const lines = result.stderr.trim().split('\n');
    expect(lines[0]).toBe(
      'ebsync: warning: --api-key with a value puts the integration key where ps and shell history show it; set EBS_API_KEY, or pass --api-key - and give it on standard input',
    );
    expect(lines[1]).toMatch(/cannot reach Temporal/);
    expect(result.stderr).not.toContain(KEY);
  });

  it.each([
    ['from standard input', ['--api-key', '-'], {}, `${KEY}\n`],
    ['from EBS_API_KEY', ['--api-key'], { EBS_API_KEY: KEY }, undefined],
  ] as const)('takes the key %s without a warning', async (_way, flags, extra, stdin) => {
    const result = await runCli(
      ['connect', '--name', 'x', ...flags],
      { ...env(), ...extra },
      60_000,
      stdin,
    );
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/cannot reach Temporal/),
    ]);
    expect(result.code).toBe(1);
  });

  it('says in one line when standard input holds no key', async () => {
    const result = await runCli(['connect', '--name', 'x', '--api-key', '-'], env(), 60_000, '');
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'ebsync: --api-key - read nothing from standard input: pipe the integration key in, or set EBS_API_KEY\n',
    );
  });
});

describe('ebsync webhooks register --sandbox-admin', () => {
  // register asks Temporal whether the connection exists: these do, as stand-ins.
  const stops: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    for (const name of ['by-setting', 'by-stdin', 'by-flag']) {
      stops.push(await standInConnection(name));
    }
  });
  afterAll(async () => {
    for (const stop of stops) await stop();
  });
  const register = (name: string, flags: string[], extra: Record<string, string>, stdin?: string) =>
    runCli(
      ['webhooks', 'register', name, '--sandbox-admin', `${sb.url}/admin`, ...flags],
      {
        EBSYNC_DATA_DIR: join(dir, 'register'),
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        ...extra,
      },
      60_000,
      stdin,
    );

  it("takes the sandbox's admin token from EBS_SANDBOX_ADMIN_TOKEN or standard input", async () => {
    const fromSetting = await register('by-setting', [], {
      EBS_SANDBOX_ADMIN_TOKEN: sb.adminToken,
    });
    expect(fromSetting.stderr).toBe('');
    expect(fromSetting.stdout).toMatch(/^registered: /);
    const fromStdin = await register('by-stdin', ['--admin-token', '-'], {}, sb.adminToken);
    expect(fromStdin.stderr).toBe('');
    expect(fromStdin.stdout).toMatch(/^registered: /);
  });

  it('warns in one line when the token is typed after the flag', async () => {
    const typed = await register('by-flag', ['--admin-token', sb.adminToken], {});
    expect(typed.code).toBe(0);
    expect(typed.stderr).toBe(
      "ebsync: warning: --admin-token with a value puts the sandbox's admin token where ps and shell history show it; set EBS_SANDBOX_ADMIN_TOKEN, or pass --admin-token - and give it on standard input\n",
    );
  });
});

describe('ebsync sandbox', () => {
  const TOKEN = 'adm_secret_flags_sandbox_token_0123456789';

  async function banner(flags: string[], env: Record<string, string>): Promise<CliProcess> {
    const cli = new CliProcess(['sandbox', '--port', '0', '--http', ...flags], {
      EBSYNC_DATA_DIR: join(dir, 'sandbox'),
      ...env,
    });
    await cli.waitForLine(/^Stop: Ctrl-C/, 60_000);
    return cli;
  }

  it('fixes its admin token and key from their settings, without a warning', async () => {
    const cli = await banner([], { EBS_SANDBOX_ADMIN_TOKEN: TOKEN, EBS_SANDBOX_API_KEY: KEY });
    try {
      expect(cli.stdout).toContain(`(header x-admin-token: ${TOKEN})`);
      expect(cli.stdout).toMatch(new RegExp(`^ {2}API key {3}${KEY} `, 'm'));
      expect(cli.stderr).toBe('');
    } finally {
      await cli.stop('SIGTERM', 15_000);
    }
  });

  it('warns in one line for a token typed after --admin-token', async () => {
    const cli = await banner(['--admin-token', TOKEN], {});
    try {
      expect(cli.stdout).toContain(`(header x-admin-token: ${TOKEN})`);
      expect(cli.stderr).toBe(
        'ebsync: warning: --admin-token with a value puts the admin token where ps and shell history show it; set EBS_SANDBOX_ADMIN_TOKEN, or pass --admin-token - and give it on standard input\n',
      );
    } finally {
      await cli.stop('SIGTERM', 15_000);
    }
  });
});

describe('ebsync webhooks endpoints add', () => {
  it("reads the endpoint's URL (a hook URL often carries a token) from standard input with '-'", async () => {
    const result = await runCli(
      ['webhooks', 'endpoints', 'add', 'stdin-hook', '-'],
      { EBSYNC_DATA_DIR: join(dir, 'endpoints') },
      60_000,
      'https://hooks.example/catch/123/token-abc\n',
    );
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^added endpoint stdin-hook → https:\/\/hooks\.example\/…$/m);
  });
});
