import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttp2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { closedPort } from '../helpers/ports.js';
import { CliProcess, PACKAGE_VERSION, freePort, jsonLines, runCli } from '../helpers/cli.js';
import { generateKeyLine } from '../../worker/data-converter.js';

/** Each test spawns the CLI (tsx and the Temporal SDK load in it): slow on a busy machine. */
const SPAWN_TIMEOUT = 120_000;

/** Help text with its line wrapping undone. */
const flat = (text: string): string => text.replace(/\s+/g, ' ');

describe.concurrent('ebsync command line', { timeout: SPAWN_TIMEOUT }, () => {
  it('a bad setting prints exactly one stderr line naming it and exits 2', async ({ expect }) => {
    const result = await runCli(['worker'], { EBS_BASE_URL: 'ftp://x' });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "ebsync: EBS_BASE_URL='ftp://x' is not allowed: expected an https:// URL ending in /api/v1/ " +
        '(http:// only to loopback with EBS_ALLOW_HTTP=true)\n',
    );
    expect(result.stdout).toBe('');
  });

  it('a route override the route table refuses stops the worker at start, one line, exit 2', async ({
    expect,
  }) => {
    const result = await runCli(['worker'], {
      EBS_ROUTE_OVERRIDES: '{"leads.nope":"GET /api/v1/nope/{id}"}',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'ebsync: EBS_ROUTE_OVERRIDES=\'{"leads.nope":"GET /api/v1/nope/{id}"}\' is not allowed: ' +
        "route override names an unknown route 'leads.nope'\n",
    );
    expect(result.stdout).toBe('');
  });

  it('a bad secret setting is reported without its value', async ({ expect }) => {
    const secret = 'sk_live_9QxW2topsecret';
    const result = await runCli(['worker'], { EBS_API_KEY: secret });
    expect(result.code).toBe(2);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^ebsync: EBS_API_KEY='\*+\(\d+ chars\)' is not allowed: /);
    expect(result.stderr).not.toContain('topsecret');
  });

  it.for([
    [['status'], { EBSYNC_STORE_URL: 'mysql://x' }, "EBSYNC_STORE_URL='****(9 chars)'"],
    [['sync', '--to', 'mysql://x'], {}, "--to: destination 'mysql://x'"],
  ] as const)(
    'names the allowed forms whole when %j is refused: only the value is masked',
    async ([args, env, refused], { expect }) => {
      const result = await runCli([...args], { ...env });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(refused);
      expect(result.stderr).toContain('postgres://USER:PASSWORD@HOST:PORT/DATABASE');
      expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    },
  );

  it.for(['--version', '-v'])(
    '%s prints the version from package.json',
    async (flag, { expect }) => {
      const result = await runCli([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`${PACKAGE_VERSION}\n`);
    },
  );

  it('--help lists every command and exits 0', async ({ expect }) => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: ebsync /);
    for (const command of ['worker', 'doctor', 'temporal', 'dev']) {
      expect(result.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    }
  });

  it.for([
    ['worker', ['Run a worker: polls TEMPORAL_TASK_QUEUE', 'EBSYNC_SHUTDOWN_GRACE']],
    [
      'temporal',
      [
        'Temporal dev server whose data persists in SQLite',
        '--port <port>',
        '--ui-port <port>',
        '--db-filename <file>',
        '--ip <ip>',
        '--namespace <name>',
      ],
    ],
    ['dev', ['The main job (what `npm start` runs)', 'mirror pass', '--port <port>']],
    ['sync', ['Mirror leads, events and appointments', '--to <destination>', '--full', '--cancel']],
    ['doctor', ['a worker answers on the task queue', '--timeout <seconds>']],
    [
      'disconnect',
      [
        "forget its credentials here (its webhook registration too; its drain stops). An installed app's grant is also revoked at the service",
        'an integration key (or legacy app credentials) still works there',
      ],
    ],
  ] as const)(
    '%s --help describes the command and exits 0',
    async ([command, fragments], { expect }) => {
      const result = await runCli([command, '--help']);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^Usage: ebsync ${command} `));
      for (const fragment of fragments) expect(flat(result.stdout)).toContain(fragment);
    },
  );

  it('help says a default once, and schedule create takes --to as sync does', async ({
    expect,
  }) => {
    const deliveries = flat((await runCli(['webhooks', 'deliveries', '--help'])).stdout);
    expect(deliveries).toContain('--limit <n> rows to show (default: 50) ');
    expect(deliveries.match(/default:? 50/g)).toHaveLength(1);
    // The --to line of each, up to the next flag.
    const to = async (args: string[]): Promise<string> =>
      /--to <destination> (.*?) --/.exec(flat((await runCli([...args, '--help'])).stdout))?.[1] ??
      '';
    const fromSync = await to(['sync']);
    expect(fromSync).toContain('hubspot, pipedrive or salesforce');
    expect(await to(['schedule', 'create'])).toBe(fromSync);
  });

  it.for([['--bogus'], ['worker', '--bogus']])(
    'ebsync %s: an unknown option exits 2 and names the option',
    async (args, { expect }) => {
      const result = await runCli(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        "ebsync: unknown option '--bogus' (the command's --help lists what it takes)\n",
      );
      expect(result.stdout).toBe('');
    },
  );

  it('an unknown command exits 2 and names the command, in one line with its suggestion', async ({
    expect,
  }) => {
    const result = await runCli(['frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "ebsync: unknown command 'frobnicate' ('ebsync --help' lists the commands)\n",
    );
    const near = await runCli(['snc']);
    expect(near.stderr).toBe(
      "ebsync: unknown command 'snc' (did you mean sync? 'ebsync --help' lists the commands)\n",
    );
    // Within a group of commands, the group's own help lists them.
    const sub = await runCli(['schedule', 'creat']);
    expect(sub.code).toBe(2);
    expect(sub.stderr).toBe(
      "ebsync: unknown command 'creat' (did you mean create? 'ebsync schedule --help' lists the commands)\n",
    );
  });

  it.for([
    [['help', 'bogus'], 'ebsync'],
    [['schedule', 'help', 'creat'], 'ebsync schedule'],
    [['webhooks', 'endpoints', 'help', 'nope'], 'ebsync webhooks endpoints'],
  ] as const)(
    'ebsync %j: help on an unknown command says so in one line, exit 2',
    async ([args, group], { expect }) => {
      const result = await runCli(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `ebsync: unknown command '${args.at(-1)}' ('${group} --help' lists the commands)\n`,
      );
      expect(result.stdout).toBe('');
    },
  );

  it.for(['', 'schedule', 'webhooks', 'webhooks endpoints'])(
    "'ebsync %s' without a subcommand prints its help on stderr and exits 2; help on it exits 0",
    async (words, { expect }) => {
      const args = words.split(' ').filter(Boolean);
      const result = await runCli(args);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(new RegExp(`^Usage: ${['ebsync', ...args].join(' ')} `));
      const asked = await runCli([...args.slice(0, -1), 'help', ...args.slice(-1)]);
      expect(asked.code).toBe(0);
      expect(asked.stdout).toBe(result.stderr);
    },
  );

  it.for([
    ['connect', '--timeout', 'abc'],
    ['connect', '--timeout', '0'],
    ['doctor', '--timeout', '12abc'],
    ['doctor', '--timeout', '-5'],
  ])(
    'ebsync %s: a duration that is not one is one line, exit 2, before anything runs',
    async (args, { expect }) => {
      const result = await runCli(args);
      expect(result.code).toBe(2);
      // Only examples the flag takes: connect's 1 s at least is not offered 500ms.
      const [range, units] =
        args[0] === 'connect'
          ? ['from 1s to 24h', '30s, 5m, 1h']
          : ['from 100ms to 24h', '500ms, 30s, 5m, 1h'];
      expect(result.stderr).toBe(
        `ebsync: option '--timeout <seconds>' argument '${args[2]}' is invalid. Expected a duration ${range}: seconds (90) or with a unit (${units}).\n`,
      );
      expect(result.stdout).toBe('');
    },
  );

  it.for([
    ['temporal', '--port', '7x'],
    ['dev', '--ui-port', '70000'],
    ['connect', '--redirect-port', 'NaN'],
  ])('ebsync %s: a port that is not one is one line, exit 2', async (args, { expect }) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      new RegExp(
        `^ebsync: option '${args[1]} <port>' argument '${args[2]}' is invalid\\. Expected a whole number from [01] to 65535\\.\\n$`,
      ),
    );
  });

  it.for(['pause', 'resume'])(
    'ebsync connect --name %s: a name `ebsync connections` reads as its command is refused, exit 2, before anything runs',
    async (name, { expect }) => {
      const result = await runCli(['connect', '--api-key', '--name', name], {
        TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
      });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toBe(
        `ebsync: --name='${name}' is not allowed: 'ebsync connections ${name}' is a command, so a connection of that name could not be shown; choose another name\n`,
      );
    },
  );

  it.for([
    ['sync', '--connection', 'BAD!'],
    ['sync', '--status', '--connection', 'Shop'],
    ['schedule', 'create', '--every', '1h', '--connection', 'BAD!'],
    ['schedule', 'list', '--connection', '-x'],
  ])(
    'ebsync %s: a name no connection could have is one line naming it and the rule, exit 2, before anything runs',
    async (args, { expect }) => {
      // Nothing answers there: a command that went on to Temporal would say so, exit 1.
      const result = await runCli(args, { TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}` });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toBe(
        `ebsync: option '--connection <id>' argument '${args.at(-1)}' is invalid. ` +
          "Expected a connection name: 1-63 lowercase letters, digits, '-' or '_', the first a letter or digit.\n",
      );
      expect(result.stdout).toBe('');
    },
  );

  it.for([
    ['sync', '--to', ''],
    ['webhooks', 'serve', '--port', '0', '--host', ''],
    ['sandbox', '--port', '0', '--db', ''],
    ['schedule', 'create', '--cron='],
    ['webhooks', 'deliveries', '--endpoint', ''],
  ])(
    'ebsync %s: a flag given an empty value is one line naming it, exit 2, before anything runs',
    async (args, { expect }) => {
      const result = await runCli(args, { TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}` });
      const flag = (args.findLast((a) => a.startsWith('--')) ?? '').replace(/=$/, '');
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toBe(`ebsync: ${flag} is empty\n`);
      expect(result.stdout).toBe('');
    },
  );

  it('sync --status --cancel is refused in one line, exit 2, before anything runs', async ({
    expect,
  }) => {
    const result = await runCli(['sync', '--status', '--cancel'], {
      TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'ebsync: --status and --cancel do not go together: --status shows the pass, --cancel stops it\n',
    );
  });

  it.for([
    ['--rewrite', '--status'],
    ['--full', '--status'],
    ['--full', '--cancel'],
  ])(
    'sync %s %s is refused in one line, exit 2, before anything runs',
    async ([starts, other], { expect }) => {
      const result = await runCli(['sync', starts ?? '', other ?? ''], {
        TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`ebsync: ${starts} starts a pass and does not go with ${other}\n`);
    },
  );

  it.for([['--help'], ['--version'], ['keygen'], ['sync', '--help']])(
    '%j into a reader that is already gone (`| head`): no stack trace, exit 0',
    async (args, { expect }) => {
      const cli = new CliProcess(args);
      // Closed before the process has started: its first write meets EPIPE.
      cli.child.stdout?.destroy();
      const result = await cli.exited;
      expect(result.stderr).toBe('');
      expect({ code: result.code, signal: result.signal }).toEqual({ code: 0, signal: null });
    },
  );

  it('doctor against a port nobody listens on says it cannot reach Temporal and exits 1', async ({
    expect,
  }) => {
    const port = await freePort();
    const result = await runCli(['doctor'], { TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
    expect(result.code).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^ebsync: cannot reach Temporal at 127\.0\.0\.1:\d+ /);
    expect(lines[0]).toContain(`127.0.0.1:${port}`);
    expect(lines[0]).toContain("start a local one with 'ebsync temporal' or set TEMPORAL_ADDRESS");
  });

  it('doctor with TLS on at a server without it: one line that says TLS is on, no Node warning', async ({
    expect,
  }) => {
    // A plain HTTP/2 listener stands for a dev server without TLS; an IP address as the
    // address had Node warn (DEP0123) in two lines before ebsync's own.
    const plain = createHttp2Server();
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const { port } = plain.address() as AddressInfo;
    try {
      const result = await runCli(['doctor', '--timeout', '2s'], {
        TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
        TEMPORAL_TLS: 'true',
      });
      expect(result.code).toBe(1);
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines, result.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/^ebsync: cannot reach Temporal at 127\.0\.0\.1:\d+ /);
      expect(lines[0]).toContain('TLS is on (TEMPORAL_TLS, TEMPORAL_TLS_* or TEMPORAL_API_KEY)');
    } finally {
      plain.close();
    }
  });

  it('a TEMPORAL_ADDRESS where another server answers (HTTP/2, 404): one line saying it is no Temporal frontend, exit 1', async ({
    expect,
  }) => {
    // What an egress gateway or a web server speaking HTTP/2 answers a gRPC call.
    const server = createHttp2Server((_request, response) => {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const result = await runCli(['connections'], { TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        new RegExp(
          `^ebsync: the server at TEMPORAL_ADDRESS 127\\.0\\.0\\.1:${port} is not a Temporal frontend \\(12 UNIMPLEMENTED: [^\\n]*\\): give the gRPC port \\(7233 by default, not the UI's\\), or start a local one with 'ebsync temporal'\\n$`,
        ),
      );
    } finally {
      server.close();
    }
  });
});

describe('ebsync worker and ebsync doctor on the test dev server', { timeout: 240_000 }, () => {
  // Local state (e.g. development keys) of both processes, kept out of the clone.
  const dataDir = mkdtempSync(join(tmpdir(), 'ebsync-cli-'));
  let worker: CliProcess | undefined;
  afterAll(() => {
    worker?.killAll();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a worker whose start-up fails says why in one line and exits, before or after it reached Temporal', async () => {
    const broken = mkdtempSync(join(tmpdir(), 'ebsync-cli-'));
    const env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `broken-${randomUUID()}`,
      EBSYNC_DATA_DIR: broken,
    };
    try {
      const nowhere = join(broken, 'nope.pem');
      const missing = await runCli(['worker'], { ...env, EBS_CA_FILE: nowhere }, 60_000);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toBe(
        `ebsync: EBS_CA_FILE: cannot read '${nowhere}' (no such file); expected a PEM file\n`,
      );
      // The refusal is the only thing said: no "worker starting" log line before it.
      expect(missing.stdout).toBe('');
      // A TLS file for Temporal is a setting too: said as one, not as Temporal unreachable.
      const tlsMissing = await runCli(
        ['connections'],
        { ...env, TEMPORAL_TLS_CERT: nowhere, TEMPORAL_TLS_KEY: `${nowhere}.key` },
        60_000,
      );
      expect(tlsMissing.code).toBe(2);
      expect(tlsMissing.stderr).toBe(
        `ebsync: TEMPORAL_TLS_CERT: cannot read '${nowhere}' (no such file); expected a PEM file\n`,
      );
      const text = join(broken, 'not.pem');
      writeFileSync(text, 'not a certificate\n');
      const notPem = await runCli(['worker'], { ...env, EBS_CA_FILE: text }, 60_000);
      expect(notPem.code).toBe(2);
      expect(notPem.stderr).toBe(
        `ebsync: EBS_CA_FILE: '${text}' holds no PEM certificate (a -----BEGIN CERTIFICATE----- block)\n`,
      );
      // A failure once connected to Temporal (its token journal cannot be opened): the
      // connection is closed and the runtime ended, so the process exits instead of idling.
      // A data dir that is a file: said in words, not as EEXIST from mkdir.
      const file = join(broken, 'a-file');
      writeFileSync(file, '');
      const dataFile = await runCli(['status'], { ...env, EBSYNC_DATA_DIR: file }, 60_000);
      expect(dataFile.code).toBe(2);
      expect(dataFile.stderr).toBe(
        `ebsync: EBSYNC_DATA_DIR: '${file}' is a file; expected a folder\n`,
      );
      // A data dir that cannot be made (mkdir under /proc answers ENOENT): the line names the
      // setting too, not only the folder. `dev` hung there, in a recursive mkdir.
      const nowhereDir = '/proc/ebsync-nope/data';
      for (const command of ['sync', 'dev']) {
        const made = await runCli([command], { ...env, EBSYNC_DATA_DIR: nowhereDir }, 45_000);
        expect(made.code, made.stderr).toBe(2);
        expect(made.stderr).toBe(
          `ebsync: EBSYNC_DATA_DIR: cannot make the folder '${nowhereDir}': its file system does not allow it (ENOENT)\n`,
        );
      }
      // A data dir that is there but takes no files for this user (a read-only mount, another
      // user's): /proc/self answers ENOENT. One line naming the setting, not Node's words.
      const unwritable = await runCli(
        ['connections'],
        { ...env, EBSYNC_DATA_DIR: '/proc/self' },
        45_000,
      );
      expect(unwritable.code, unwritable.stderr).toBe(2);
      expect(unwritable.stderr).toBe(
        "ebsync: EBSYNC_DATA_DIR '/proc/self': the development key file cannot be made there (ENOENT); choose a data directory this user can write, or set EBSYNC_ENCRYPTION_KEYS\n",
      );
      const keysFolder = join(broken, 'keys-folder');
      mkdirSync(join(keysFolder, 'encryption-keys'), { recursive: true });
      const notKeys = await runCli(
        ['connections'],
        { ...env, EBSYNC_DATA_DIR: keysFolder },
        45_000,
      );
      expect(notKeys.code, notKeys.stderr).toBe(2);
      expect(notKeys.stderr).toBe(
        `ebsync: EBSYNC_DATA_DIR: ${join(keysFolder, 'encryption-keys')} is not a file; expected the development key file (remove it to make a new one) or keys in EBSYNC_ENCRYPTION_KEYS\n`,
      );
      // With keys given, the receiver's registrations file is the first it cannot make: said
      // as that, exit 2; its EACCES or ENOENT was told as a port that needs privileges.
      const serve = await runCli(
        ['webhooks', 'serve', '--port', '0'],
        { ...env, EBSYNC_DATA_DIR: '/proc/self', EBSYNC_ENCRYPTION_KEYS: generateKeyLine('t1') },
        45_000,
      );
      expect(serve.code, serve.stderr).toBe(2);
      expect(serve.stderr).toBe(
        "ebsync: '/proc/self/webhooks.db' cannot be made (ENOENT); expected a path in a folder this user can write\n",
      );
      // A store that does not open (nothing listens there): refused before any task is
      // taken, its password masked; it used to start and poll as if all were well.
      const store = `postgres://ebsync:st0re-pw@127.0.0.1:${await closedPort()}/ebsyncx`;
      const noStore = await runCli(
        ['worker'],
        { ...env, EBSYNC_STORE_URL: store, EBSYNC_DATA_DIR: join(broken, 'store-case') },
        60_000,
      );
      expect(noStore.code, noStore.stderr).toBe(2);
      expect(noStore.stderr).toMatch(
        /^ebsync: EBSYNC_STORE_URL postgres:\/\/\*\*\*@127\.0\.0\.1:\d+\/ebsyncx cannot be opened: .*ECONNREFUSED.*\n$/,
      );
      expect(noStore.stderr).not.toContain('st0re-pw');
      mkdirSync(join(broken, 'token-journal.db'));
      const late = await runCli(['worker'], env, 60_000);
      // A folder where its file must be: bad input, as any place a setting names.
      expect(late.code, late.stderr).toBe(2);
      expect(late.stderr.trimEnd().split('\n')).toHaveLength(1);
    } finally {
      rmSync(broken, { recursive: true, force: true });
    }
  });

  it('a TEMPORAL_NAMESPACE the server does not have: one line naming it, exit 2, promptly', async () => {
    // Not "cannot reach Temporal" (it answered), no gRPC status bytes, and no worker left idling.
    const env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: 'nsbb3',
      TEMPORAL_TASK_QUEUE: `no-namespace-${randomUUID()}`,
      EBSYNC_DATA_DIR: dataDir,
    };
    const line =
      `ebsync: TEMPORAL_NAMESPACE 'nsbb3' does not exist at ${env.TEMPORAL_ADDRESS}: create it ` +
      "('temporal operator namespace create --namespace nsbb3') or use the default, 'default'\n";
    for (const command of [['worker'], ['status'], ['sync'], ['doctor']]) {
      const result = await runCli(command, env, 45_000);
      expect({ command, code: result.code, stderr: result.stderr }).toEqual({
        command,
        code: 2,
        stderr: line,
      });
      // The worker's log holds no warning with a stack for it either.
      expect(jsonLines(result.stdout).filter((l) => Number(l.level) >= 40)).toEqual([]);
    }
  });

  it('doctor reports the running worker; SIGTERM stops the worker cleanly', async () => {
    const env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `cli-test-${randomUUID()}`,
      EBSYNC_SHUTDOWN_GRACE: '5s',
      EBSYNC_DATA_DIR: dataDir,
    };
    worker = new CliProcess(['worker'], env);
    // tsx startup plus bundling the workflows takes several seconds on a busy machine.
    await worker.waitForLine(/"msg":"worker started"/, 90_000);
    const started = jsonLines(worker.stdout).find((line) => line.msg === 'worker started');
    expect(started).toMatchObject({
      level: 30,
      name: 'ebsync',
      pid: worker.child.pid,
      address: env.TEMPORAL_ADDRESS,
      namespace: 'default',
      taskQueue: env.TEMPORAL_TASK_QUEUE,
      shutdownGraceMs: 5_000,
    });

    const doctor = await runCli(['doctor', '--timeout', '60'], env, 120_000);
    expect(doctor.stderr).toBe('');
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toMatch(/^ok: /);
    expect(doctor.stdout).toContain(`Temporal ${env.TEMPORAL_ADDRESS} (namespace default)`);
    expect(doctor.stdout).toContain(`worker ebsync ${PACKAGE_VERSION} on `);
    expect(doctor.stdout).toContain(` pid ${worker.child.pid},`);
    expect(doctor.stdout).toContain(`task queue ${env.TEMPORAL_TASK_QUEUE}\n`);

    const stopped = await worker.stop('SIGTERM', 60_000);
    expect(stopped.stderr).toBe('');
    expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 0, signal: null });
    const messages = jsonLines(stopped.stdout).map((line) => line.msg);
    expect(messages).toContain('worker stopped');
    expect(messages.indexOf('worker stopped')).toBeGreaterThan(messages.indexOf('worker started'));
    // Which signal stopped it: a worker stopped from outside is told from one that failed.
    const asked = jsonLines(stopped.stdout).find((line) => line.signal !== undefined);
    expect(asked).toMatchObject({ signal: 'SIGTERM' });
  });
});
