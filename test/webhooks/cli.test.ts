import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { CliProcess, runCli } from '../helpers/cli.js';
import { closedPort } from '../helpers/ports.js';
import { startSandbox } from '../../sandbox/server.js';
import { standInConnection } from '../helpers/temporal.js';

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
    [
      [
        'webhooks',
        'register',
        'shop',
        '--url',
        'https://me:pa55word@hooks.example.com',
        '--secret-stdin',
      ],
      /^ebsync: --url is not allowed: it holds a user name or password \(not shown here\)/,
    ],
    [
      [
        'webhooks',
        'register',
        'shop',
        '--url',
        'https://hooks.example.com/in?token=1',
        '--secret-stdin',
      ],
      /^ebsync: --url is not allowed: it has a query or fragment \(not shown here: it may carry a token\), which deliveries would not keep \(they go to <url>\/webhooks\/shop\)/,
    ],
    [
      [
        'webhooks',
        'register',
        'shop',
        '--url',
        'https://hooks.example.com/webhooks/cafe',
        '--secret-stdin',
      ],
      /^ebsync: --url is not allowed: it ends in \/webhooks\/cafe, another connection's delivery path; expected the receiver's URL, to which \/webhooks\/shop is added \(or that whole delivery URL\)/,
    ],
    [['webhooks', 'serve', '--port', '70000'], /Expected a whole number from 0 to 65535/],
    [
      ['webhooks', 'serve', '--host', '999.1.1.1', '--port', '0'],
      /^ebsync: cannot listen on 999\.1\.1\.1 port 0: --host 999\.1\.1\.1 is neither an IP address nor a name this machine resolves$/m,
    ],
  ])('ebsync %j', async (args, message) => {
    const result = await runCli(args, env);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toMatch(/pa55word|token=1/);
  });

  // Hook URLs carry tokens in their path or query: a refusal names the URL to its origin only.
  it.for([
    [
      'https://hooks.zapier.com:999999/hooks/catch/123/pathSecretZap/',
      'url does not parse as a URL (not shown: it may carry a token): expected an http(s) URL',
    ],
    [
      'https://hooks.example:99999/in?api-version=1&sig=AzureSigSecret987',
      'url does not parse as a URL (not shown: it may carry a token): expected an http(s) URL',
    ],
    [
      'htps://hooks.slack.com/services/T0/B0/SlackPathSecret',
      "url 'htps://hooks.slack.com/…' is not allowed: expected an http(s) URL",
    ],
    ['mailto:MailSecret@example.com', "url 'mailto:…' is not allowed: expected an http(s) URL"],
    ['', 'url - read nothing from standard input: pipe the endpoint URL in'],
  ])('endpoints add - with %j on stdin: one line, the URL masked, exit 2', async ([url, line]) => {
    const result = await runCli(
      ['webhooks', 'endpoints', 'add', 'h5', '-'],
      env,
      30_000,
      `${url}\n`,
    );
    expect(result.stderr).toBe(`ebsync: ${line}\n`);
    expect(result.stderr).not.toMatch(/Secret/);
    expect(result.code).toBe(2);
  });

  // Bad input before anything else: the admin token is there, Temporal is not asked.
  it.for(['notaurl', 'ftp:/x', '127.0.0.1:14011/admin'])(
    'register --sandbox-admin %s: one line naming the flag and what it takes, exit 2',
    async (admin) => {
      const own = join(dir, 'bad-sandbox-admin');
      const result = await runCli(['webhooks', 'register', 'shop', '--sandbox-admin', admin], {
        EBSYNC_DATA_DIR: own,
        EBS_SANDBOX_ADMIN_TOKEN: 'adm_cli_test_token_0123456789',
        TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
      });
      expect(result.stderr).toBe(
        `ebsync: --sandbox-admin='${admin}' is not allowed: expected an http:// or https:// URL of the sandbox's admin API, e.g. https://127.0.0.1:4010/admin\n`,
      );
      expect(result.code).toBe(2);
      expect(existsSync(join(own, 'webhooks.db'))).toBe(false);
    },
  );

  it.for([
    ['webhooks', 'endpoints', 'enable', 'nosuch'],
    ['webhooks', 'endpoints', 'remove', 'nosuch'],
    ['webhooks', 'deliveries', '--endpoint', 'nosuch'],
  ])('ebsync %j, an endpoint that does not exist: one line, exit 1', async (args) => {
    const result = await runCli(args, env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "ebsync: no endpoint named 'nosuch' ('ebsync webhooks endpoints list' shows the ones there are)\n",
    );
  });

  it('says at its start that it takes unsigned deliveries, when told to in development', async () => {
    const serve = new CliProcess(['webhooks', 'serve', '--port', '0'], {
      ...env,
      EBSYNC_MODE: 'development',
      EBSYNC_WEBHOOK_ALLOW_UNSIGNED: 'true',
    });
    try {
      await serve.waitForLine(/webhook receiver listening/, 60_000);
      expect(serve.stdout + serve.stderr).toMatch(
        /EBSYNC_WEBHOOK_ALLOW_UNSIGNED=true \(or webhooks\.allowUnsigned in the config file\): deliveries without a signature are accepted/,
      );
    } finally {
      serve.killAll();
    }
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

/**
 * `endpoints add --connections` takes a name no running connection has (it may be connected
 * later) and says so on stderr, so a typo does not go unnoticed; the endpoint is added.
 */
describe('ebsync webhooks endpoints add --connections', () => {
  const hook = 'https://hooks.example/automation';

  it('names each connection of the filter that does not run on the task queue', async () => {
    const queue = `endpoints-cli-${Date.now()}`;
    const stop = await standInConnection('cli-known', queue);
    try {
      const result = await runCli(
        ['webhooks', 'endpoints', 'add', 'filtered', hook, '--connections', 'cli-known,cli-typo'],
        {
          EBSYNC_DATA_DIR: join(dir, 'filtered'),
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          TEMPORAL_TASK_QUEUE: queue,
        },
      );
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^added endpoint filtered → /);
      expect(result.stderr).toBe(
        `ebsync: note: no connection named 'cli-typo' runs on task queue '${queue}' now; ` +
          `the endpoint gets its changes once one is connected under that name ('ebsync connections' lists them)\n`,
      );
    } finally {
      await stop();
    }
  });

  it("refuses 'pause' and 'resume', which ebsync connect gives no connection, adding nothing", async () => {
    for (const name of ['pause', 'resume']) {
      const result = await runCli(
        ['webhooks', 'endpoints', 'add', 'reserved', hook, '--connections', `cli-ok,${name}`],
        { EBSYNC_DATA_DIR: join(dir, 'reserved'), TEMPORAL_ADDRESS: inject('temporalAddress') },
      );
      expect(result.code, result.stderr).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(
        `ebsync: --connections: '${name}' is not a connection name: 'ebsync connections ${name}' is a command, so 'ebsync connect' gives no connection that name\n`,
      );
    }
  });

  it('says the names were not checked when Temporal does not answer', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const result = await runCli(
      ['webhooks', 'endpoints', 'add', 'unchecked', hook, '--connections', 'cli-any'],
      { EBSYNC_DATA_DIR: join(dir, 'unchecked'), TEMPORAL_ADDRESS: address },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^added endpoint unchecked → /);
    expect(result.stderr).toMatch(
      new RegExp(
        `^ebsync: note: --connections was not checked: cannot reach Temporal at ${address} `,
      ),
    );
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

/**
 * `register` refuses what `sync` and `schedule create` refuse: a connection that does not exist
 * and a destination that cannot be opened. Nothing is registered, so no webhooks.db is made.
 */
describe('ebsync webhooks register, what could never be applied', () => {
  const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}\n`;
  const own = (name: string): Record<string, string> => ({
    EBSYNC_DATA_DIR: join(dir, name),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
  });

  it('refuses a connection that does not exist', async () => {
    const env = own('no-connection');
    const args = ['webhooks', 'register', 'cli-nosuchconn', '--secret-stdin'];
    const result = await runCli(args, env, 60_000, secret);
    expect(result.stderr).toBe(
      "ebsync: no connection named 'cli-nosuchconn': 'ebsync connect --name cli-nosuchconn' connects it\n",
    );
    expect(result.code).not.toBe(0);
    expect(existsSync(join(env.EBSYNC_DATA_DIR!, 'webhooks.db'))).toBe(false);
  });

  it("says in words when the sandbox's admin API cannot be reached", async () => {
    const stop = await standInConnection('cli-admin-down');
    try {
      const admin = `https://127.0.0.1:${await closedPort()}/admin`;
      const result = await runCli(
        ['webhooks', 'register', 'cli-admin-down', '--sandbox-admin', admin],
        { ...own('admin-down'), EBS_SANDBOX_ADMIN_TOKEN: 'adm_cli_test_token_0123456789' },
      );
      expect(result.stderr).toBe(
        `ebsync: cannot reach the sandbox's admin API at --sandbox-admin ${admin}: connection refused, nothing listens there (ECONNREFUSED); nothing was registered\n`,
      );
      expect(result.code).toBe(1);
    } finally {
      await stop();
    }
  });

  it("says the sandbox's refusal of a wrong admin token in its words, not its JSON", async () => {
    const stop = await standInConnection('cli-admin-wrong');
    const sandbox = await startSandbox({
      http: true,
      adminToken: 'adm_cli_right_token_0123456789',
    });
    try {
      const result = await runCli(
        ['webhooks', 'register', 'cli-admin-wrong', '--sandbox-admin', `${sandbox.url}/admin`],
        { ...own('admin-wrong'), EBS_SANDBOX_ADMIN_TOKEN: 'adm_cli_wrong_token_0123456789' },
      );
      expect(result.stderr).toBe(
        'ebsync: the sandbox refused the registration: HTTP 401 The x-admin-token is not valid: ' +
          'check --admin-token (or EBS_SANDBOX_ADMIN_TOKEN), the token the sandbox printed as it started; ' +
          'nothing was registered\n',
      );
      expect(result.code).toBe(1);
      expect(existsSync(join(dir, 'admin-wrong', 'webhooks.db'))).toBe(false);
    } finally {
      await sandbox.close();
      await stop();
    }
  });

  it("takes the sandbox's own address for its admin API, and says what to give on a 404", async () => {
    const stop = await standInConnection('cli-admin-root');
    const token = 'adm_cli_root_token_0123456789';
    const sandbox = await startSandbox({ http: true, adminToken: token });
    try {
      const env = { ...own('admin-root'), EBS_SANDBOX_ADMIN_TOKEN: token };
      // A path the sandbox has no admin API at: the address it printed is named.
      const wrong = await runCli(
        ['webhooks', 'register', 'cli-admin-root', '--sandbox-admin', `${sandbox.url}/api/v1`],
        env,
      );
      expect(wrong.stderr).toMatch(
        new RegExp(
          `^ebsync: the sandbox refused the registration: HTTP 404 .*: no sandbox admin API at ${sandbox.url}/api/v1; give --sandbox-admin the admin address \`ebsync sandbox\` printed as it started \\(its 'admin' line\\); nothing was registered\n$`,
        ),
      );
      expect(wrong.code).toBe(1);
      expect(sandbox.admin.webhooks()).toEqual([]);
      // The address the sandbox was started on: its admin API is at /admin.
      const root = await runCli(
        ['webhooks', 'register', 'cli-admin-root', '--sandbox-admin', `${sandbox.url}/`],
        env,
      );
      expect(root.code, root.stderr).toBe(0);
      expect(root.stdout).toMatch(/\(sandbox endpoint 1\)/);
      expect(sandbox.admin.webhooks().map((e) => e.id)).toEqual([1]);
    } finally {
      await sandbox.close();
      await stop();
    }
  });

  it('registered again, removes the endpoint the first registration made at the sandbox', async () => {
    const stop = await standInConnection('cli-twice');
    const token = 'adm_cli_twice_token_0123456789';
    const sandbox = await startSandbox({ http: true, adminToken: token });
    try {
      const env = { ...own('twice'), EBS_SANDBOX_ADMIN_TOKEN: token, EBSYNC_WEBHOOK_PORT: '18999' };
      const args = ['webhooks', 'register', 'cli-twice', '--sandbox-admin', `${sandbox.url}/admin`];
      const first = await runCli(args, env);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toMatch(/\(sandbox endpoint 1\)/);
      const second = await runCli(args, env);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stdout).toMatch(
        /\(sandbox endpoint 2\).*\nremoved the earlier sandbox endpoint 1, whose secret this replaces\n$/,
      );
      // One endpoint signs for this receiver: the one whose secret is stored.
      expect(sandbox.admin.webhooks().map((e) => e.id)).toEqual([2]);

      // A secret of the user's own replaces the sandbox's: endpoint 2 cannot be removed without
      // the admin API, and its deliveries would be refused. Said, exit 1; kept for later.
      const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
      const mine = await runCli(
        ['webhooks', 'register', 'cli-twice', '--secret-stdin'],
        env,
        undefined,
        `${secret}\n`,
      );
      expect(mine.code).toBe(1);
      expect(mine.stdout).toMatch(
        /^registered: deliveries to .*the signing secret is stored sealed\n$/,
      );
      expect(mine.stderr).toBe(
        "ebsync: the sandbox endpoint 2 that the earlier registration of 'cli-twice' made still signs with the replaced secret, so the receiver refuses its deliveries: remove it at the sandbox (DELETE <its admin API>/webhooks/2), or register with --sandbox-admin, which removes it\n",
      );
      expect(sandbox.admin.webhooks().map((e) => e.id)).toEqual([2]);
      // Said once: a later secret of the user's own does not say it again (it may be gone).
      const again = await runCli(
        ['webhooks', 'register', 'cli-twice', '--secret-stdin'],
        env,
        undefined,
        `${secret}\n`,
      );
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toBe('');
      // The next registration at the sandbox removes it, though the ones before made none.
      const third = await runCli(args, env);
      expect(third.code, third.stderr).toBe(0);
      expect(third.stdout).toMatch(
        /removed the earlier sandbox endpoint 2, whose secret this replaces\n$/,
      );
      expect(sandbox.admin.webhooks().map((e) => e.id)).toEqual([3]);
      // Nothing is left to remove after that.
      const fourth = await runCli(args, env);
      expect(fourth.code, fourth.stderr).toBe(0);
      expect(fourth.stdout.match(/removed the earlier/g)).toHaveLength(1);
      expect(sandbox.admin.webhooks().map((e) => e.id)).toEqual([4]);
    } finally {
      await sandbox.close();
      await stop();
    }
  });

  it('refuses a destination that cannot be opened, unless told not to check', async () => {
    const env = own('bad-destination');
    const stop = await standInConnection('cli-bad-destination');
    try {
      const args = ['webhooks', 'register', 'cli-bad-destination', '--secret-stdin'];
      // Under a regular file: no directory can be made there, even by root.
      const file = join(dir, 'a-file');
      writeFileSync(file, 'not a directory');
      const to = ['--to', `sqlite:${file}/x.db`];
      const result = await runCli([...args, ...to], env, 60_000, secret);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(
        /^ebsync: cannot open destination sqlite:.*a-file\/x\.db: .*; nothing was registered \(opened from this machine: --no-check-destination skips the check\)/,
      );
      expect(result.code).not.toBe(0);
      expect(existsSync(join(env.EBSYNC_DATA_DIR!, 'webhooks.db'))).toBe(false);
      const unchecked = await runCli(
        [...args, ...to, '--no-check-destination'],
        env,
        60_000,
        secret,
      );
      expect(unchecked.stderr).toBe('');
      expect(unchecked.stdout).toMatch(/^registered: .* update sqlite:.*a-file\/x\.db;/);
    } finally {
      await stop();
    }
  });
});
