import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLead } from '../../sandbox/resources/leads.js';
import { runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';
import { loadConfig } from '../../config/index.js';
import { connectClient } from '../../worker/temporal-client.js';
import { connectionWorkflow } from '../../workflows/connection.js';
import { connectionWorkflowId } from '../../workflows/connection-types.js';

/**
 * Text someone else wrote, as the service shows it to ebsync: a business whose name holds an
 * escape sequence that retitles the terminal, one that clears the screen, and a newline
 * followed by what would pass for a line of ebsync's own.
 */
const NAME = 'Evil\u001b]0;pwned\u0007 Co\u001b[2J\u009b2J\nebsync: forged line';
const SHOWN = 'Evil\\x1b]0;pwned\\x07 Co\\x1b[2J\\x9b2J\\x0aebsync: forged line';

let stack: CliStack;
let key: string;

beforeAll(async () => {
  stack = await startCliStack({
    name: 'outside-text',
    apiKey: false,
    settings: (sb) => {
      const { business, owner } = sb.admin.createBusiness({ name: NAME });
      // The business's name reaches ebsync as a lead's brand_name.
      createLead(sb.ctx, business.id, { email: 'ann@example.com' }, {});
      key = sb.admin.createKey({ userId: owner.id }).key;
      return {};
    },
  });
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

/** No control character but the report's own line ends, and no line the name made. */
function expectNoRawText(out: string): void {
  // eslint-disable-next-line no-control-regex -- the control characters are what is checked
  expect(out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  expect(out.split('\n').some((line) => line.startsWith('ebsync: forged'))).toBe(false);
}

describe("a business's name, written by someone else", () => {
  it('is shown with its control characters written out by connect, connections and status', async () => {
    const connect = await runCli(
      ['connect', '--name', 'evil', '--api-key', '-'],
      stack.env,
      90_000,
      key,
    );
    expect(connect.code, connect.stderr).toBe(0);
    expectNoRawText(connect.stdout);
    expect(connect.stdout).toContain(`connected: ${SHOWN} (connection evil`);

    const list = await runCli(['connections'], stack.env);
    expect(list.code, list.stderr).toBe(0);
    expectNoRawText(list.stdout);
    expect(list.stdout).toContain(SHOWN);

    const one = await runCli(['connections', 'evil'], stack.env);
    expect(one.code, one.stderr).toBe(0);
    expectNoRawText(one.stdout);
    expect(one.stdout).toMatch(new RegExp(`^business +${SHOWN.replace(/[\\[\]]/g, '\\$&')}$`, 'm'));

    const status = await runCli(['status'], stack.env);
    expectNoRawText(status.stdout);
    expect(status.stdout).toContain(SHOWN);
  }, 180_000);

  it('is the name itself in --json, which escapes it as JSON does', async () => {
    const list = await runCli(['connections', '--json'], stack.env);
    expect(list.code, list.stderr).toBe(0);
    // JSON.stringify leaves U+009B (a CSI to some terminals) raw: it is written as \u009b.
    expectNoRawText(list.stdout);
    expect(list.stdout).toContain('\\u001b]0;pwned\\u0007 Co\\u001b[2J\\u009b2J\\nebsync');
    const [first] = JSON.parse(list.stdout) as { businessName: string }[];
    expect(first?.businessName).toBe(NAME);

    const one = await runCli(['connections', 'evil', '--json'], stack.env);
    expectNoRawText(one.stdout);
    expect((JSON.parse(one.stdout) as { businessName: string }).businessName).toBe(NAME);

    const status = await runCli(['status', '--json'], stack.env);
    expectNoRawText(status.stdout);
    const report = JSON.parse(status.stdout) as { connections: { businessName: string }[] };
    expect(report.connections[0]?.businessName).toBe(NAME);
  }, 120_000);

  it("has a pass's summary show a path's newline written out", async () => {
    // A path someone chose (a schedule's, another operator's mirror) with a line in it.
    const to = `sqlite:${join(stack.dir, 'x\nebsync: forged.db')}`;
    const sync = await runCli(['sync', 'leads', '--connection', 'evil', '--to', to], stack.env);
    expect(sync.code, sync.stderr).toBe(0);
    expectNoRawText(sync.stdout);
    expect(sync.stdout).toContain('x\\x0aebsync: forged.db');
  }, 120_000);

  it('has status --json say each problem on one line of stderr', async () => {
    // A folder that cannot be made (a file is in its way): the pass fails, naming the path.
    writeFileSync(join(stack.dir, 'file'), '');
    const to = `sqlite:${join(stack.dir, 'file', 'y\nebsync: forged.db')}`;
    const sync = await runCli(
      ['sync', 'leads', '--connection', 'evil', '--no-check-destination', '--to', to],
      stack.env,
    );
    expect(sync.code).toBe(1);
    const status = await runCli(['status', '--json'], stack.env);
    expect(status.code).toBe(1);
    expectNoRawText(status.stderr);
    const lines = status.stderr.trimEnd().split('\n');
    expect(lines.every((line) => line.startsWith('ebsync: mirror of connection evil into'))).toBe(
      true,
    );
    expect(status.stderr).toContain('y\\x0aebsync: forged.db: last pass failed');
  }, 120_000);
});

describe("a schedule's note, written by whoever paused it", () => {
  it('is shown on its line by schedule describe', async () => {
    const created = await runCli(
      ['schedule', 'create', 'leads', '--connection', 'evil', '--every', '1h'],
      stack.env,
    );
    expect(created.code, created.stderr).toBe(0);
    const id = 'sync-evil-leads-incremental';
    // Paused through Temporal (its UI, another tool), with a note of its own.
    const { client, close } = await connectClient(loadConfig(stack.env));
    try {
      await client.schedule.getHandle(id).pause(NAME);
      const described = await runCli(['schedule', 'describe', id], stack.env);
      expect(described.code, described.stderr).toBe(0);
      expectNoRawText(described.stdout);
      expect(described.stdout.split('\n')[0]).toBe(`${id}: paused (${SHOWN})`);
    } finally {
      await runCli(['schedule', 'delete', id], stack.env);
      await close();
    }
  }, 120_000);
});

describe("a service's error text", () => {
  let service: Server;
  let baseUrl: string;

  beforeAll(async () => {
    // A service that refuses every call, its error message carrying escapes and a line.
    service = createServer((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          meta: { status: 'error' },
          status: 400,
          reason: 'invalid_parameter',
          message: `per ${NAME}`,
        }),
      );
    });
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(service.address() as AddressInfo).port}/api/v1/`;
  });

  afterAll(async () => {
    await new Promise((resolve) => service?.close(resolve));
  });

  it('stays on the one error line that quotes it', async () => {
    const connect = await runCli(
      ['connect', '--name', 'outside-refused', '--api-key', '-'],
      { ...stack.env, EBS_BASE_URL: baseUrl, EBS_ALLOW_HTTP: 'true' },
      90_000,
      'ik_any_key_at_all',
    );
    expect(connect.code).toBe(1);
    expectNoRawText(connect.stderr);
    expect(connect.stderr).toBe(
      `ebsync: could not reach the service: leads.list: HTTP 400 per ${SHOWN}\n`,
    );
  }, 120_000);
});

describe("an authorization server's error_description", () => {
  let server: Server;
  let authUrl: string;

  beforeAll(async () => {
    // It refuses every refresh for good (invalid_grant), its description the name above.
    server = createServer((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: 'invalid_grant', error_description: NAME }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    authUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it('is written out in the warning of a schedule of the connection it made need re-authorization', async () => {
    const { client, close } = await connectClient(loadConfig(stack.env));
    const id = 'refused-grant';
    const handle = await client.workflow.start(connectionWorkflow, {
      taskQueue: stack.env.TEMPORAL_TASK_QUEUE ?? '',
      workflowId: connectionWorkflowId(id),
      args: [
        {
          profile: {
            connectionId: id,
            kind: 'installed_app',
            baseUrl: stack.sb.baseUrl,
            authUrl,
            clientId: 'ebc_test',
            permissions: ['lead_read'],
          },
          // Expired: the workflow refreshes it at once, and the server refuses.
          credentials: {
            kind: 'oauth',
            accessToken: 'at_expired',
            accessExpiresAt: Date.now() - 60_000,
            accessIssuedAt: Date.now() - 3_660_000,
            refreshToken: 'rt_refused',
          },
        },
      ],
    });
    try {
      let state = '';
      for (let i = 0; i < 60 && state !== 'needs_reauth'; i++) {
        const shown = await runCli(['connections', id, '--json'], stack.env);
        state = shown.code === 0 ? (JSON.parse(shown.stdout) as { state: string }).state : '';
        if (state !== 'needs_reauth') await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      expect(state).toBe('needs_reauth');
      const created = await runCli(
        ['schedule', 'create', 'leads', '--connection', id, '--every', '1h', '--paused'],
        stack.env,
      );
      expect(created.code, created.stderr).toBe(0);
      expectNoRawText(created.stderr);
      expect(created.stderr).toContain(SHOWN);
    } finally {
      await runCli(['schedule', 'delete', `sync-${id}-leads-incremental`], stack.env);
      await handle.terminate('test done');
      await close();
    }
  }, 180_000);
});
