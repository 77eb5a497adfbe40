import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import Database from 'better-sqlite3';
import got from 'got';
import { afterAll, describe, expect, it } from 'vitest';
import { registerSandboxCommand } from '../../cli/commands/sandbox.js';
import { CliProcess, freePort, REPO_ROOT, runCli } from '../helpers/cli.js';

const tmp = mkdtempSync(join(tmpdir(), 'ebsync-sandbox-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const ADMIN_TOKEN = 'adm_cli_test_token_0123456789';

/** The `sandbox` command as commander defines it, parse-only: errors throw instead of exiting. */
function sandboxCommand(): Command {
  const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined });
  registerSandboxCommand(program);
  const command = program.commands.find((c) => c.name() === 'sandbox');
  if (!command) throw new Error('no sandbox command');
  return command.exitOverride().configureOutput({ writeErr: () => undefined });
}

/** Every `ebsync sandbox …` command line shown in README.md and docs/*.md, as argv words. */
function documentedSandboxLines(): { file: string; args: string[] }[] {
  const files = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).map((f) => `docs/${f}`)];
  return files.flatMap((file) =>
    [...readFileSync(join(REPO_ROOT, file), 'utf8').matchAll(/ebsync sandbox\b([^`#|\n]*)/g)].map(
      (m) => ({ file, args: (m[1] ?? '').trim().split(/\s+/).filter(Boolean) }),
    ),
  );
}

describe('ebsync sandbox flags and their docs', () => {
  it('every flag in the docs/sandbox.md table exists, and every flag is in the table', () => {
    const doc = readFileSync(join(REPO_ROOT, 'docs/sandbox.md'), 'utf8');
    const table = doc.slice(doc.indexOf('| Flag'), doc.indexOf('\n\n', doc.indexOf('| Flag')));
    const documented = new Set(
      table
        .split('\n')
        .flatMap((row) =>
          [...(row.split('|')[1] ?? '').matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]),
        ),
    );
    const defined = new Set(
      sandboxCommand()
        .options.map((o) => o.long)
        .filter((long): long is string => long !== undefined),
    );
    expect(documented.size).toBeGreaterThan(10);
    expect([...documented].filter((f) => !defined.has(f))).toEqual([]);
    expect([...defined].filter((f) => !documented.has(f))).toEqual([]);
  });

  it('every `ebsync sandbox` line of README.md and docs/ parses', () => {
    const lines = documentedSandboxLines();
    expect(lines.some((l) => l.args.includes('--auto-approve'))).toBe(true);
    for (const { file, args } of lines) {
      const command = sandboxCommand();
      let parsed: ReturnType<Command['parseOptions']> | undefined;
      expect(() => (parsed = command.parseOptions(args)), `${file}: ${args.join(' ')}`).not.toThrow(
        CommanderError,
      );
      expect(parsed?.unknown, `${file}: ${args.join(' ')}`).toEqual([]);
    }
  });

  const TOKEN_RULE = 'expected 24 to 256 letters, digits, _, -, . or ~';
  it.for([
    [
      '--admin-token too short',
      ['--admin-token', 'adm_short'],
      `--admin-token is not allowed: ${TOKEN_RULE}`,
    ],
    [
      '--admin-token with spaces',
      ['--admin-token', 'adm has spaces in it but is long enough'],
      `--admin-token is not allowed: ${TOKEN_RULE}`,
    ],
    [
      '--admin-token too long',
      ['--admin-token', `adm_${'y'.repeat(256)}`],
      `--admin-token is not allowed: ${TOKEN_RULE}`,
    ],
    [
      'a non-loopback --host without --allow-remote',
      ['--host', '0.0.0.0'],
      "--host 0.0.0.0 is not a loopback address: the sandbox's OAuth consent authenticates nobody, so it listens on loopback (127.0.0.1, ::1, localhost) unless --allow-remote is given",
    ],
    [
      'plain HTTP on a non-loopback --host',
      ['--http', '--host', '0.0.0.0', '--allow-remote'],
      '--http is allowed on a loopback --host only (127.0.0.1, ::1, localhost), not on 0.0.0.0: beyond loopback the sandbox speaks HTTPS',
    ],
  ] as const)('%s: one line saying what is allowed, exit 2', async ([, args, line]) => {
    const result = await runCli(['sandbox', '--port', '0', ...args], { EBSYNC_DATA_DIR: tmp });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`ebsync: ${line}\n`);
    expect(result.stdout).toBe('');
  });

  it.for([
    [
      'EBS_SANDBOX_API_KEY',
      'notik',
      "expected 'ik_' followed by at least 8 letters, digits, _ or -",
    ],
    ['EBS_SANDBOX_ADMIN_TOKEN', 'short', TOKEN_RULE],
  ] as const)(
    '%s set to a bad value is named by the setting: one line, exit 2',
    async ([name, value, rule]) => {
      const result = await runCli(['sandbox', '--port', '0'], {
        EBSYNC_DATA_DIR: tmp,
        [name]: value,
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`ebsync: ${name} is not allowed: ${rule}\n`);
      expect(result.stderr).not.toContain(value);
    },
  );

  it.each([
    ['a directory', () => tmp, 'it is a directory'],
    [
      'a file that is no database',
      () => {
        const file = join(tmp, 'garbage.db');
        writeFileSync(file, 'this is not an SQLite database, only some text in a file'.repeat(4));
        return file;
      },
      'the file is not an SQLite database',
    ],
    [
      'a place no file can be made',
      () => {
        const file = join(tmp, 'a-file');
        writeFileSync(file, 'not a folder');
        return join(file, 'x.db');
      },
      'it cannot be opened or made there (no such folder, or no permission)',
    ],
    [
      'a folder that does not exist',
      () => join(tmp, 'no-such-folder', 'x.db'),
      `its folder ${join(tmp, 'no-such-folder')} does not exist`,
    ],
  ] as const)(
    '--db naming %s: one line with the flag, the path and why, exit 2',
    async (_what, path, why) => {
      const db = path();
      const result = await runCli(['sandbox', '--port', '0', '--http', '--db', db], {
        EBSYNC_DATA_DIR: tmp,
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `ebsync: --db '${db}' cannot be used: ${why}; expected an SQLite file the sandbox may read and write (made if missing), or no --db for an in-memory database\n`,
      );
    },
  );

  it('refuses a --port in use in one line, as the other listeners say it', async () => {
    const port = await freePort();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    try {
      const result = await runCli(['sandbox', '--http', '--port', String(port)], {
        EBSYNC_DATA_DIR: tmp,
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `ebsync: cannot listen on 127.0.0.1 port ${port}: the port is in use; choose another with --port\n`,
      );
    } finally {
      taken.close();
    }
  });

  it('exports every limit started unlike its default, so ebsync plans with the same ones', async () => {
    const cli = new CliProcess(
      [
        'sandbox',
        '--http',
        '--port',
        '0',
        '--reach-limit',
        '100',
        '--max-per',
        '50',
        '--rate-limit',
        '7',
      ],
      { EBSYNC_DATA_DIR: tmp },
    );
    try {
      await cli.waitForLine(/^Stop: Ctrl-C/, 60_000);
      const exported = /^ {2}export (.*)$/m.exec(cli.stdout)?.[1] ?? '';
      const env = Object.fromEntries(exported.split(' ').map((pair) => pair.split('=')));
      expect(env).toMatchObject({
        EBS_ALLOW_HTTP: 'true',
        EBS_REACH_LIMIT: '100',
        EBS_PAGE_SIZE: '50',
        EBS_RATE_LIMIT: '7',
      });
      expect(env.EBS_API_KEY).toMatch(/^ik_/);
      expect((await cli.stop('SIGTERM', 15_000)).code).toBe(0);
    } finally {
      cli.killAll();
    }
  });

  it('says on stderr when it answers 500, naming the route and the error, no secret', async () => {
    // In-process callers pass onInternalError; the command passed nothing, so a 500 (a bug, or
    // a --db file changed under it) left no trace in its output at all.
    const db = join(tmp, 'broken-row.db');
    const cli = new CliProcess(
      ['sandbox', '--http', '--port', '0', '--db', db, '--leads', '30', '--seed', 'broken'],
      { EBSYNC_DATA_DIR: tmp },
    );
    try {
      await cli.waitForLine(/^Stop: Ctrl-C/, 60_000);
      const base = /base URL\s+(\S+)/.exec(cli.stdout)?.[1] ?? '';
      const key = /API key\s+(ik_\S+)/.exec(cli.stdout)?.[1] ?? '';
      const file = new Database(db);
      const row = file
        .prepare("SELECT id FROM records WHERE type = 'appointment' AND deleted_at IS NULL LIMIT 1")
        .get() as { id: number };
      file
        .prepare(
          "UPDATE records SET attrs = json_set(attrs, '$.starts_at', 'garbage') WHERE type = 'appointment' AND id = ?",
        )
        .run(row.id);
      file.close();
      const res = await got(`${base}appointments/${row.id}`, {
        headers: { 'api-key': key },
        throwHttpErrors: false,
      });
      expect(res.statusCode).toBe(500);
      await expect.poll(() => cli.stderr, { timeout: 5_000 }).toMatch(/internal error/);
      const line = cli.stderr.split('\n').find((l) => /internal error/.test(l)) ?? '';
      expect(line).toContain('GET /api/v1/appointments/:id');
      expect(line).toContain('Invalid time value');
      expect(cli.stderr).not.toContain(key);
      expect((await cli.stop('SIGTERM', 15_000)).code).toBe(0);
    } finally {
      cli.killAll();
    }
  });

  it('keeps its OAuth app for ebsync in --db: a second start prints the same client id', async () => {
    const db = join(tmp, 'kept-app.db');
    const start = async (): Promise<string> => {
      const cli = new CliProcess(['sandbox', '--http', '--port', '0', '--db', db], {
        EBSYNC_DATA_DIR: tmp,
      });
      try {
        await cli.waitForLine(/^Stop: Ctrl-C/, 60_000);
        expect((await cli.stop('SIGTERM', 15_000)).code).toBe(0);
        return /export .*EBS_CLIENT_ID=(ebc_\S+)/.exec(cli.stdout)?.[1] ?? '';
      } finally {
        cli.killAll();
      }
    };
    const first = await start();
    expect(first).toMatch(/^ebc_/);
    // Customer-like data: owner-only, whatever the umask.
    expect(statSync(db).mode & 0o777).toBe(0o600);
    expect(await start()).toBe(first);
  });

  it('with --allow-remote, starts on a non-loopback host and warns on stderr', async () => {
    const cli = new CliProcess(['sandbox', '--host', '0.0.0.0', '--port', '0', '--allow-remote'], {
      EBSYNC_DATA_DIR: tmp,
    });
    try {
      await cli.waitForLine(/^Stop: Ctrl-C/, 60_000);
      expect(cli.stdout).toMatch(/^ {2}base URL {2}https:\/\/0\.0\.0\.0:\d+\/api\/v1\/$/m);
      expect(cli.stderr).toContain(
        'ebsync: warning: the sandbox is reachable beyond this machine on 0.0.0.0; its OAuth consent authenticates nobody',
      );
      expect((await cli.stop('SIGTERM', 15_000)).code).toBe(0);
    } finally {
      cli.killAll();
    }
  });

  it("runs the README's command: seeded data, auto-approved consent, the fixed admin token", async () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const shown = /^npx ebsync sandbox ([^#\n]*?)\s+#/m.exec(readme)?.[1];
    expect(shown).toBe('--leads 1000 --events 200 --auto-approve');
    // The admin token from its setting: a token typed after --admin-token shows in ps.
    const cli = new CliProcess(['sandbox', ...(shown ?? '').split(' '), '--port', '0'], {
      EBSYNC_DATA_DIR: tmp,
      EBS_SANDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
    });
    try {
      await cli.waitForLine(/^Stop: Ctrl-C/, 90_000);
      const value = (label: string): string =>
        new RegExp(`^  ${label}\\s+(\\S+)`, 'm').exec(cli.stdout)?.[1] ?? '';
      expect(cli.stdout).toMatch(/^ {2}data {6}1,000 leads .*, 200 events, /m);
      expect(cli.stdout).toContain(`(header x-admin-token: ${ADMIN_TOKEN})`);
      expect(cli.stdout).toMatch(/export EBS_BASE_URL=https:\/\/.* EBS_CA_FILE=/);
      // Default limits: nothing for ebsync to be told.
      expect(cli.stdout).not.toMatch(/EBS_REACH_LIMIT|EBS_PAGE_SIZE|EBS_RATE_LIMIT/);
      const url = value('admin').replace(/\/admin$/, '');
      const https = { certificateAuthority: readFileSync(value('CA file'), 'utf8') };
      const admin = got.extend({
        prefixUrl: `${url}/admin`,
        headers: { 'x-admin-token': ADMIN_TOKEN },
        https,
        throwHttpErrors: false,
        retry: { limit: 0 },
      });
      expect((await admin.get('oauth').json<{ auto_approve: boolean }>()).auto_approve).toBe(true);
      // The app the sandbox made for ebsync: its client id is in the export line, and its
      // consent redirects to a loopback IP on any port, as `ebsync connect --redirect-port` may.
      const clientId = /export .*EBS_CLIENT_ID=(ebc_\S+)/.exec(cli.stdout)?.[1] ?? '';
      expect(value('OAuth app')).toBe(clientId);
      const apps = await admin.get('apps').json<{ data: { name: string; client_id: string }[] }>();
      expect(apps.data.filter((a) => a.client_id === clientId).map((a) => a.name)).toEqual([
        'ebsync',
      ]);
      // No approve page: the consent answers at once with a code for the redirect URI.
      const consent = await got(`${url}/oauth/authorize`, {
        https,
        followRedirect: false,
        throwHttpErrors: false,
        searchParams: {
          response_type: 'code',
          client_id: clientId,
          redirect_uri: 'http://127.0.0.1:45678/callback',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
          state: 'demo',
        },
      });
      expect(consent.statusCode).toBe(302);
      const location = new URL(consent.headers.location ?? '');
      expect(location.origin + location.pathname).toBe('http://127.0.0.1:45678/callback');
      expect(location.searchParams.get('code')).toMatch(/.{20,}/);
      expect(location.searchParams.get('state')).toBe('demo');
      const stopped = await cli.stop('SIGTERM', 15_000);
      expect(stopped.code).toBe(0);
    } finally {
      cli.killAll();
    }
  }, 150_000);
});
