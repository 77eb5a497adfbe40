import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import got from 'got';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canConnect } from '../../worker/dev-server.js';
import { devAddress } from '../../cli/temporal.js';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';

/**
 * `ebsync dev --port … --ip …`, what `npm start -- --port 7707` passes. The flags used to be
 * ignored: `dev` looked for a server and started its own at TEMPORAL_ADDRESS (by default
 * localhost:7233), so with someone else's server on 7233 it silently used that one.
 */
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-dev-flags-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `args`, refused with `line` alone (exit 2) and nothing left listening on `ports`. */
async function expectRefused(
  args: string[],
  env: Record<string, string>,
  line: string,
  ports: number[],
): Promise<void> {
  const result = await runCli(args, env, 30_000);
  expect(result.code).toBe(2);
  expect(result.stderr.trim().split('\n')).toEqual([`ebsync: ${line}`]);
  for (const port of ports) expect(await canConnect('127.0.0.1', port)).toBe(false);
}

describe('ebsync dev --ip with an IPv6 address', () => {
  const flags = { ip: '::1', port: 7707, namespace: 'default', ipGiven: true, portGiven: true };

  it('connects to it in brackets, as TEMPORAL_ADDRESS takes an IPv6 host', () => {
    expect(devAddress(flags, undefined)).toBe('[::1]:7707');
    expect(devAddress(flags, '[::1]:7707')).toBe('[::1]:7707');
    expect(devAddress(flags, 'localhost:7707')).toBe('localhost:7707');
    expect(() => devAddress(flags, '[::2]:7707')).toThrow(/disagrees with TEMPORAL_ADDRESS/);
  });

  // The dev server on ::1 alone answers only errors (its services reach one another over
  // 127.0.0.1): refused in one line, where it crashed on the UI's URL (http://::1:…).
  it('refuses --ip ::1 in one line (exit 2), naming --ip :: instead', async () => {
    const port = await freePort();
    await expectRefused(
      ['temporal', '--ip', '::1', '--port', String(port)],
      { EBSYNC_DATA_DIR: join(dir, 'ipv6') },
      `--ip ::1: the Temporal dev server does not run on an IPv6 address alone; use --ip 127.0.0.1, or --ip :: for every address (IPv6 clients then reach it at [::1]:${port})`,
      [port],
    );
  });
});

describe('ebsync dev --port', () => {
  it('refuses in one line (exit 2) when TEMPORAL_ADDRESS names another address', async () => {
    const [port, other] = [await freePort(), await freePort()];
    await expectRefused(
      ['dev', '--port', String(port)],
      {
        TEMPORAL_ADDRESS: `127.0.0.1:${other}`,
        EBSYNC_DATA_DIR: join(dir, 'refused'),
        EBSYNC_WEBHOOK_PORT: '0',
        EBSYNC_STATUS_PORT: '0',
      },
      `--port ${port} disagrees with TEMPORAL_ADDRESS=127.0.0.1:${other}: give one of them, or the same address in both`,
      [port, other],
    );
  });

  it('refuses a --port past 64535 without --ui-port in one line (exit 2), starting nothing', async () => {
    await expectRefused(
      ['temporal', '--port', '65000', '--db-filename', join(dir, 'high-port.db')],
      { EBSYNC_DATA_DIR: join(dir, 'high-port') },
      '--port 65000 leaves no room for the web UI at port + 1000 (at most 65535); give --ui-port',
      [65000],
    );
  });

  it.each(['temporal', 'dev'])(
    'ebsync %s refuses a --ui-port equal to --port in one line (exit 2), starting nothing',
    async (command) => {
      const port = await freePort();
      await expectRefused(
        [command, '--port', String(port), '--ui-port', String(port)],
        {
          EBSYNC_DATA_DIR: join(dir, 'same-port'),
          EBSYNC_WEBHOOK_PORT: '0',
          EBSYNC_STATUS_PORT: '0',
        },
        '--ui-port must differ from --port',
        [port],
      );
    },
  );

  it.each(['temporal', 'dev'])(
    'ebsync %s refuses an empty --db-filename in one line (exit 2), not as the current folder',
    async (command) => {
      const port = await freePort();
      await expectRefused(
        [command, '--port', String(port), '--db-filename', ''],
        { EBSYNC_DATA_DIR: join(dir, 'empty-db') },
        '--db-filename is empty',
        [port],
      );
    },
  );

  it.each(['temporal', 'dev'])(
    'ebsync %s refuses a --namespace Temporal names could not be, in one line (exit 2)',
    async (command) => {
      for (const name of ['bad ns!', '', '-lead', `n${'s'.repeat(255)}`]) {
        const result = await runCli(
          [command, '--namespace', name, '--port', String(await freePort())],
          { EBSYNC_DATA_DIR: join(dir, 'ns') },
          30_000,
        );
        expect(result.code, name).toBe(2);
        expect(result.stderr.trim().split('\n')).toEqual([
          `ebsync: option '--namespace <name>' argument '${name}' is invalid. Expected 1-255 letters, digits, '.', '_' or '-', beginning and ending with a letter or digit.`,
        ]);
      }
    },
  );

  // It took whatever answered for a Temporal server, and said to start one with 'ebsync
  // temporal' or set TEMPORAL_ADDRESS: what it had just tried.
  it('says in one line that what holds --port is no Temporal server (exit 1)', async () => {
    const other = createServer((_, res) => res.writeHead(404).end());
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const { port } = other.address() as AddressInfo;
    try {
      const result = await runCli(
        ['dev', '--port', String(port), '--ui-port', String(await freePort())],
        {
          EBSYNC_DATA_DIR: join(dir, 'not-temporal'),
          EBSYNC_WEBHOOK_PORT: '0',
          EBSYNC_STATUS_PORT: '0',
        },
        60_000,
      );
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(
            `^ebsync: something listens at 127\\.0\\.0\\.1:${port}, but no Temporal server answered there \\(.+\\): stop what holds port ${port}, or start ebsync dev on another with --port$`,
          ),
        ),
      ]);
    } finally {
      other.close();
    }
  });

  it('refuses in one line (exit 2) when TEMPORAL_NAMESPACE names another namespace than --namespace', async () => {
    const port = await freePort();
    await expectRefused(
      ['dev', '--port', String(port), '--namespace', 'shop'],
      {
        TEMPORAL_NAMESPACE: 'other',
        EBSYNC_DATA_DIR: join(dir, 'ns-refused'),
        EBSYNC_WEBHOOK_PORT: '0',
        EBSYNC_STATUS_PORT: '0',
      },
      '--namespace shop disagrees with TEMPORAL_NAMESPACE=other: give one of them, or the same name in both',
      [port],
    );
  });

  // Its server made the --namespace and the worker ran in TEMPORAL_NAMESPACE's (`default`);
  // a TEMPORAL_NAMESPACE of its own the server did not make, and the worker crashed on it,
  // a stack trace and exit 1.
  it.each([
    ['--namespace shop', ['--namespace', 'shop'], {}],
    ['TEMPORAL_NAMESPACE=shop', [], { TEMPORAL_NAMESPACE: 'shop' }],
  ])(
    'ebsync dev %s makes that namespace on its server and runs its worker and main job in it',
    async (name, flags, given) => {
      const [port, uiPort] = [await freePort(), await freePort()];
      const dev = new CliProcess(
        ['dev', '--port', String(port), '--ui-port', String(uiPort), ...flags],
        {
          ...given,
          EBSYNC_DATA_DIR: join(dir, `ns-${flags.length}`),
          EBSYNC_WEBHOOK_PORT: '0',
          EBSYNC_STATUS_PORT: '0',
        },
      );
      try {
        await dev.waitForLine(/^Mirroring leads, events and appointments /, 120_000);
        expect(dev.stdout).toMatch(/"namespace":"shop","taskQueue":"ebsync"[^\n]*"worker started"/);
        expect(dev.stderr, name).toBe('');
        const status = await runCli(['connections'], {
          TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
          TEMPORAL_NAMESPACE: 'shop',
          EBSYNC_DATA_DIR: join(dir, `ns-${flags.length}`),
        });
        expect(status.stdout).toMatch(/^demo {2}active /m);
        expect((await dev.interrupt(60_000)).code).toBe(0);
      } finally {
        dev.killAll();
      }
    },
    300_000,
  );

  it.each([
    [
      '10.9.9.9',
      'cannot listen on 10.9.9.9 port PORT: 10.9.9.9 is not an address of this machine; choose one with --ip (127.0.0.1 or 0.0.0.0, say)',
    ],
    [
      '999.1.1.1',
      'cannot listen on 999.1.1.1 port PORT: --ip 999.1.1.1 is neither an IP address nor a name this machine resolves',
    ],
  ])(
    'ebsync temporal --ip %s is refused in one line naming the flag (exit 2)',
    async (ip, line) => {
      const port = await freePort();
      const result = await runCli(
        ['temporal', '--ip', ip, '--port', String(port), '--db-filename', join(dir, 'ip.db')],
        { EBSYNC_DATA_DIR: join(dir, 'ip') },
        30_000,
      );
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toEqual([
        `ebsync: ${line.replace('PORT', String(port))}`,
      ]);
    },
  );

  it('ebsync temporal with its UI away from --port + 1000 says to set TEMPORAL_UI_URL, and only then', async () => {
    for (const away of [false, true]) {
      const port = await freePort();
      const uiPort = away ? await freePort() : port + 1000;
      const server = new CliProcess(
        ['temporal', '--port', String(port), '--ui-port', String(uiPort)],
        { EBSYNC_DATA_DIR: join(dir, `ui-${away}`) },
      );
      try {
        // Stopped the moment it says it is ready: a SIGTERM then once found no handler yet
        // (the line was written first), ended ebsync at once and left the server running.
        await server.waitForLine(/^ {2}stop: Ctrl-C/, 120_000);
        const hint = `  links: the UI is not at --port + 1000, so set TEMPORAL_UI_URL=http://127.0.0.1:${uiPort} for ebsync status and the status page\n`;
        if (away) expect(server.stdout).toContain(hint);
        else expect(server.stdout).not.toContain('TEMPORAL_UI_URL');
        expect((await server.stop('SIGTERM', 60_000)).code).toBe(0);
      } finally {
        server.killAll();
      }
    }
  }, 300_000);

  it('without TEMPORAL_ADDRESS, runs its server on --port and its worker uses it; its receiver stores deliveries', async () => {
    const [port, uiPort] = [await freePort(), await freePort()];
    const env = {
      EBSYNC_DATA_DIR: join(dir, 'own'),
      EBSYNC_WEBHOOK_PORT: '0',
      EBSYNC_STATUS_PORT: '0',
    };
    const secret = `whsec_${Buffer.from('dev-flags-webhook-secret-0123456').toString('base64')}`;
    const dev = new CliProcess(['dev', '--port', String(port), '--ui-port', String(uiPort)], env);
    try {
      await dev.waitForLine(new RegExp(`^Temporal UI: http://127\\.0\\.0\\.1:${uiPort}`), 120_000);
      // An 'ebsync status' in another shell finds the UI at --port + 1000 unless told.
      await dev.waitForLine(/^ {2}links: /, 10_000);
      expect(dev.stdout).toContain(
        `  links: the UI is not at --port + 1000, so set TEMPORAL_UI_URL=http://127.0.0.1:${uiPort} for ebsync status and the status page\n`,
      );
      // ... and finds the server itself only at the address it is told.
      expect(dev.stdout).toContain(
        `  other terminals: set TEMPORAL_ADDRESS=127.0.0.1:${port} for ebsync connect, sync and status (unset, they look at localhost:7233)\n`,
      );
      expect(await canConnect('127.0.0.1', port)).toBe(true);
      // The main job's client and worker reach that server: the pass starts there.
      await dev.waitForLine(/^Mirroring leads, events and appointments /, 120_000);
      expect(dev.stdout).toContain(`"address":"127.0.0.1:${port}"`);
      // The receiver runs in the worker's process, which the launcher starts with V8 flags
      // that a thread given them explicitly refuses: the inbox's writer thread once did, and
      // every delivery was answered 503 under 'npm start' (never under 'webhooks serve').
      const listening = await dev.waitForLine(/webhook receiver listening/, 120_000);
      const receiver = /"url":"(http:\/\/[^"]+)\/webhooks\/\{connection\}"/.exec(listening)?.[1];
      expect(receiver).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const registered = await runCli(
        [
          'webhooks',
          'register',
          'demo',
          '--secret-stdin',
          '--url',
          'http://127.0.0.1:9/webhooks/demo',
        ],
        { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${port}` },
        60_000,
        secret,
      );
      expect(registered.stderr).toBe('');
      expect(registered.code, registered.stderr).toBe(0);
      const body = JSON.stringify({
        id: 'dev_1',
        type: 'lead.updated',
        data: { record_type: 'lead', id: 1, action: 'updated' },
      });
      const now = new Date();
      const answer = await got.post(`${receiver}/webhooks/demo`, {
        body,
        headers: {
          'content-type': 'application/json',
          'webhook-id': 'dev_1',
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': new Webhook(secret).sign('dev_1', now, body),
        },
        throwHttpErrors: false,
        retry: { limit: 0 },
      });
      expect({ status: answer.statusCode, body: answer.body }).toMatchObject({ status: 200 });
      const stopped = await dev.interrupt(60_000);
      expect(stopped.code).toBe(0);
      expect(await canConnect('127.0.0.1', port)).toBe(false);
    } finally {
      dev.killAll();
    }
  }, 240_000);
});
