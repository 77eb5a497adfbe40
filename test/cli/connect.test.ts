import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import got from 'got';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../sandbox/server.js';
import { createLead } from '../../sandbox/resources/leads.js';
import { CliProcess, runCli } from '../helpers/cli.js';
import { loadConfig } from '../../config/index.js';
import { requireWorker } from '../../cli/worker-check.js';
import { closedPort } from '../helpers/ports.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';
import { connectionWorkflow } from '../../workflows/connection.js';
import { connectionWorkflowId, statusQuery } from '../../workflows/connection-types.js';
import { webhookDrainWorkflow } from '../../workflows/drain.js';
import { drainWorkflowId, inboxWakeSignal } from '../../workflows/drain-types.js';
import { registeredConnectionIds } from '../../store/webhook-registrations.js';

/** `ebsync connect`, `connections` and `disconnect` as a user runs them, with a worker running. */
let stack: CliStack;
let sb: Sandbox;
let env: Record<string, string>;
let appId: number;

beforeAll(async () => {
  stack = await startCliStack({
    name: 'connect-cli',
    sandbox: { autoApprove: true },
    // Connections here are made with OAuth or a key given on the command line.
    apiKey: false,
    settings: (started) => {
      createLead(started.ctx, started.businessId, { email: 'first@example.com' }, {});
      const app = started.admin.createApp({
        name: 'ebsync',
        redirectUris: ['http://127.0.0.1/callback'],
        permissions: ['lead_read', 'offerings_read'],
      });
      appId = app.id;
      return {
        EBS_AUTH_URL: started.authUrl,
        EBS_CLIENT_ID: app.client_id,
        EBSYNC_LOG_LEVEL: 'info',
      };
    },
  });
  ({ sb, env } = stack);
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

/** A connection's workflow started directly on `queue`, as another deployment would. */
async function startConnection(queue: string, name: string, apiKey: string) {
  const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS ?? '' });
  const client = new Client({ connection });
  const handle = await client.workflow.start(connectionWorkflow, {
    taskQueue: queue,
    workflowId: connectionWorkflowId(name),
    args: [
      {
        profile: {
          connectionId: name,
          kind: 'integration_key',
          baseUrl: sb.baseUrl,
          permissions: [],
        },
        credentials: { kind: 'apiKey', apiKey },
      },
    ],
  });
  return { connection, handle };
}

describe('ebsync connect', () => {
  it('connects an installed app through the browser flow and names the business', async () => {
    const connect = new CliProcess(
      ['connect', '--name', 'shop', '--redirect-port', '0', '--timeout', '60'],
      env,
    );
    const line = await connect.waitForLine(/https:\/\/\S+\/oauth\/authorize\?\S+/, 60_000);
    const url = /https:\/\/\S+/.exec(line)?.[0] ?? '';
    expect(new URL(url).searchParams.get('code_challenge_method')).toBe('S256');
    // The "browser": the sandbox approves at once and redirects to the CLI's listener.
    const page = await got(url, { https: { certificateAuthority: readFileSync(sb.caFile ?? '') } });
    expect(page.body).toContain('ebsync is connected');
    const result = await connect.exited;
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /connected: Sandbox Photo Booths \(connection shop, installed_app, 2 permissions; leads readable\)/,
    );
    expect(result.stdout).not.toContain(sb.apiKey);
  }, 300_000);

  it('says in one line when the redirect port is taken, naming --redirect-port', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const result = await runCli(
        ['connect', '--name', 'busy', '--redirect-port', String(port), '--timeout', '30'],
        env,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `ebsync: cannot listen on 127.0.0.1 port ${port}: the port is in use; choose another with --redirect-port\n`,
      );
    } finally {
      taken.close();
    }
  }, 120_000);

  it('refuses an empty --client-id in one line (exit 2) rather than falling back to EBS_CLIENT_ID', async () => {
    expect(env.EBS_CLIENT_ID).toBeTruthy();
    const result = await runCli(['connect', '--name', 'empty-id', '--client-id', ''], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('ebsync: --client-id is empty\n');
  });

  it('connects with an integration key after one cheap call, and refuses a bad key in one line', async () => {
    // The key from standard input: never on the command line, where ps shows it.
    const ok = await runCli(
      ['connect', '--name', 'cli-key', '--api-key', '-'],
      env,
      120_000,
      sb.apiKey,
    );
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    // The spec lists no permissions for a key: say what is known, never "0 permissions".
    expect(ok.stdout).toBe(
      "connected: Sandbox Photo Booths (connection cli-key, integration_key, permissions not listed by the service: a key has its creator's or fewer; leads readable)\n",
    );

    const bad = await runCli(['connect', '--name', 'bad', '--api-key'], {
      ...env,
      EBS_API_KEY: 'ik_not_a_real_key_123',
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/refused the credential/);
    expect(bad.stderr).not.toContain('ik_not_a_real_key_123');

    // Nothing listens at the address: the reason once, in words, and the setting to check.
    const port = await closedPort();
    const away = await runCli(['connect', '--name', 'away', '--api-key'], {
      ...env,
      EBS_API_KEY: 'ik_not_a_real_key_123',
      EBS_BASE_URL: `https://127.0.0.1:${port}/api/v1/`,
    });
    expect(away.code, away.stderr).toBe(1);
    expect(away.stderr).toBe(
      `ebsync: could not reach the service at https://127.0.0.1:${port}: connection refused, nothing listens there (ECONNREFUSED); check EBS_BASE_URL\n`,
    );
  }, 300_000);

  it('lists connections with their state, and disconnect revokes the grant at the service', async () => {
    const listed = await runCli(['connections', '--json'], env, 120_000);
    expect(listed.code).toBe(0);
    const all = JSON.parse(listed.stdout) as {
      connectionId: string;
      state: string;
      kind: string;
    }[];
    expect(all.map((c) => [c.connectionId, c.state, c.kind])).toEqual([
      ['cli-key', 'active', 'integration_key'],
      ['shop', 'active', 'installed_app'],
    ]);
    expect(listed.stdout).not.toMatch(/accessToken|refreshToken|apiKey/);

    const one = await runCli(['connections', 'shop'], env, 120_000);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/^state\s+active$/m);
    expect(one.stdout).toMatch(/^base URL\s+https:\/\/127\.0\.0\.1:\d+\/api\/v1\/$/m);
    expect(one.stdout).toMatch(/^permissions\s+lead_read offerings_read$/m);

    const gone = await runCli(['disconnect', 'shop'], env, 120_000);
    expect(gone.code).toBe(0);
    expect(gone.stdout).toBe('disconnected: shop (its grant revoked at the service)\n');
    const grants = sb.admin.grants({ appId });
    expect(grants).toHaveLength(1);
    expect(grants.filter((g) => g.revoked_at === null)).toEqual([]);

    const after = await runCli(['connections'], env, 120_000);
    expect(after.stdout).toMatch(/^cli-key\s+active/m);
    expect(after.stdout).not.toMatch(/^shop/m);
    const missing = await runCli(['disconnect', 'nope'], env, 120_000);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no connection named 'nope'/);
  }, 300_000);

  it('disconnect of a key connection says the key still works: an app cannot revoke one', async () => {
    const made = await runCli(
      ['connect', '--name', 'tmpkey', '--api-key', '-'],
      env,
      120_000,
      sb.apiKey,
    );
    expect(made.code).toBe(0);
    // Its webhooks: a registration on this machine and a drain running.
    const registered = await runCli(
      [
        'webhooks',
        'register',
        'tmpkey',
        '--secret-stdin',
        '--no-check-destination',
        '--url',
        // The delivery URL given whole: taken as it is, not appended to again.
        'https://hooks.example.com/webhooks/tmpkey',
      ],
      env,
      120_000,
      `whsec_${randomBytes(24).toString('base64')}`,
    );
    expect(registered.stderr).toBe('');
    expect(registered.code, registered.stderr).toBe(0);
    const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS ?? '' });
    try {
      const client = new Client({ connection });
      const drain = await client.workflow.signalWithStart(webhookDrainWorkflow, {
        taskQueue: env.TEMPORAL_TASK_QUEUE ?? '',
        workflowId: drainWorkflowId('tmpkey'),
        args: [{ connectionId: 'tmpkey', destination: 'sqlite:/nonexistent/never-opened.db' }],
        signal: inboxWakeSignal,
        signalArgs: [{ destination: 'sqlite:/nonexistent/never-opened.db' }],
      });

      const gone = await runCli(['disconnect', 'tmpkey'], env, 120_000);
      expect(gone.stderr).toBe('');
      expect(gone.code).toBe(0);
      expect(gone.stdout).toBe(
        "disconnected: tmpkey (forgotten here; its integration key still works: revoke it in the service's settings, the service gives apps no call to revoke a key)\n" +
          'webhooks: its registration removed here; the receiver refuses deliveries to https://hooks.example.com/webhooks/tmpkey from now on: remove that endpoint at the service too\n' +
          'webhooks: its drain stopped; notices it had not applied stay in the inbox\n',
      );
      expect((await drain.describe()).status.name).toBe('CANCELLED');
      expect(registeredConnectionIds(join(env.EBSYNC_DATA_DIR ?? '', 'webhooks.db'))).toEqual([]);
    } finally {
      await connection.close();
    }
    // What the line says is so: the service still takes the key.
    const leads = await got(new URL('leads?per=1', sb.baseUrl), {
      headers: { 'Api-Key': sb.apiKey },
      https: { certificateAuthority: readFileSync(sb.caFile ?? '') },
    });
    expect(leads.statusCode).toBe(200);
  }, 300_000);

  it('disconnect says a drain no worker runs was asked to stop, not that it stopped', async () => {
    const made = await runCli(
      ['connect', '--name', 'tmpkey2', '--api-key', '-'],
      env,
      120_000,
      sb.apiKey,
    );
    expect(made.code, made.stderr).toBe(0);
    const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS ?? '' });
    try {
      const client = new Client({ connection });
      // On a queue no worker polls, the cancel is recorded and waits: the drain runs on.
      const drain = await client.workflow.signalWithStart(webhookDrainWorkflow, {
        taskQueue: 'no-worker-polls-this-queue',
        workflowId: drainWorkflowId('tmpkey2'),
        args: [{ connectionId: 'tmpkey2', destination: 'sqlite:/nonexistent/never-opened.db' }],
        signal: inboxWakeSignal,
        signalArgs: [{ destination: 'sqlite:/nonexistent/never-opened.db' }],
      });
      try {
        const gone = await runCli(['disconnect', 'tmpkey2'], env, 120_000);
        expect(gone.stderr).toBe('');
        // Kept by Temporal and not yet carried out: exit 4, as for an update no worker took.
        expect(gone.code).toBe(4);
        expect(gone.stdout).toBe(
          "disconnected: tmpkey2 (forgotten here; its integration key still works: revoke it in the service's settings, the service gives apps no call to revoke a key)\n" +
            'webhooks: its drain was asked to stop and had not within 15 s (it stops when a worker next runs it); notices it had not applied stay in the inbox\n',
        );
        expect((await drain.describe()).status.name).toBe('RUNNING');
      } finally {
        await drain.terminate('test over').catch(() => undefined);
      }
    } finally {
      await connection.close();
    }
  }, 300_000);

  it('pauses and resumes a connection; an unknown or disconnected one is one line, exit 1', async () => {
    const paused = await runCli(['connections', 'pause', 'cli-key'], env, 120_000);
    expect(paused.stderr).toBe('');
    expect(paused.code).toBe(0);
    expect(paused.stdout).toBe(
      "paused: cli-key; its syncs wait until 'ebsync connections resume cli-key'\n",
    );
    const shown = await runCli(['connections', 'cli-key'], env, 120_000);
    expect(shown.stdout).toMatch(/^state\s+paused$/m);
    expect(shown.stdout).toMatch(/^permissions\s+\(permissions not listed by the service/m);

    const again = await runCli(['connections', 'pause', 'cli-key'], env, 120_000);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(
      "already paused: cli-key; its syncs wait until 'ebsync connections resume cli-key'\n",
    );
    const resumed = await runCli(['connections', 'resume', 'cli-key'], env, 120_000);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toBe('resumed: cli-key\n');
    // Resumed again: nothing changes, and the line says so rather than 'resumed'.
    const active = await runCli(['connections', 'resume', 'cli-key'], env, 120_000);
    expect(active.code).toBe(0);
    expect(active.stdout).toBe('not paused: cli-key; nothing to resume, its syncs run\n');
    const listed = await runCli(['connections'], env, 120_000);
    expect(listed.stdout).toMatch(/^cli-key\s+active/m);

    const unknown = await runCli(['connections', 'pause', 'nope'], env, 120_000);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(
      "ebsync: no connection named 'nope': 'ebsync connect --name nope' connects it\n",
    );
    const gone = await runCli(['connections', 'resume', 'shop'], env, 120_000);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(
      /^ebsync: connection 'shop' was disconnected; 'ebsync connect --name shop' connects it anew\n$/,
    );
  }, 300_000);

  it('with Temporal up and no worker on the queue, says how to start one instead of waiting', async () => {
    const lonely = {
      ...env,
      TEMPORAL_TASK_QUEUE: `nobody-polls-${Date.now()}`,
      EBS_API_KEY: 'ik_not_checked_yet',
    };
    for (const args of [
      ['connect', '--name', 'x', '--api-key'],
      ['connections'],
      ['connections', 'pause', 'cli-key'],
      ['disconnect', 'cli-key'],
      ['doctor'],
    ]) {
      const result = await runCli(args, lonely, 60_000);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr).toBe(
        `ebsync: no worker polls task queue '${lonely.TEMPORAL_TASK_QUEUE}' on ${env.TEMPORAL_ADDRESS}; start one with 'npm start' (Temporal and a worker) or 'ebsync worker', then run this again\n`,
      );
    }
  }, 180_000);

  it('a connection whose workflow runs on another queue: connect refuses to take it over; with no worker there, the rest name that queue in one line', async () => {
    // Another deployment (TEMPORAL_TASK_QUEUE) started this connection; its worker is gone.
    const orphanQueue = `orphan-queue-${Date.now()}`;
    const name = `orphan-${Date.now()}`;
    const { connection, handle } = await startConnection(orphanQueue, name, 'ik_orphan_not_real');
    try {
      const expected = `ebsync: no worker polls task queue '${orphanQueue}' on ${env.TEMPORAL_ADDRESS}, where this workflow runs (this deployment's queue is '${env.TEMPORAL_TASK_QUEUE}'); start one there with 'TEMPORAL_TASK_QUEUE=${orphanQueue} ebsync worker', then run this again\n`;
      // connect refuses before it asks anything: the name is the other deployment's.
      const connect = await runCli(
        ['connect', '--name', name, '--api-key'],
        { ...env, EBS_API_KEY: sb.apiKey },
        60_000,
      );
      expect(connect.code).toBe(1);
      expect(connect.stderr).toBe(
        `ebsync: connection '${name}' belongs to the deployment on task queue '${orphanQueue}', not this one's ('${env.TEMPORAL_TASK_QUEUE}', TEMPORAL_TASK_QUEUE) in namespace 'default'; nothing was changed: connect under another --name, or run this with TEMPORAL_TASK_QUEUE=${orphanQueue} to reconnect it there\n`,
      );
      expect((await handle.describe()).taskQueue).toBe(orphanQueue);
      for (const args of [
        ['connections', name],
        ['connections', 'pause', name],
        ['disconnect', name],
        // A pass would ask the connection's workflow for its token and wait without end.
        ['sync', 'leads', '--connection', name, '--to', `sqlite:${join(tmpdir(), `${name}.db`)}`],
      ]) {
        const result = await runCli(args, { ...env, EBS_API_KEY: sb.apiKey }, 60_000);
        expect(result.code, args.join(' ')).toBe(1);
        expect(result.stderr, args.join(' ')).toBe(expected);
      }
    } finally {
      await handle.terminate('test done');
      await connection.close();
    }
  }, 240_000);

  it('an update its worker stopped a moment ago cannot answer is not sent: one line, soon, and never carried out later', async () => {
    // The worker polled a moment ago, so the check for one passes; then nobody answers.
    const queue = `gone-queue-${Date.now()}`;
    const name = `gone-${Date.now()}`;
    const gone = new CliProcess(['worker'], { ...env, TEMPORAL_TASK_QUEUE: queue });
    await gone.waitForLine(/worker started/, 90_000);
    const { connection, handle } = await startConnection(queue, name, sb.apiKey);
    try {
      // Answered by the worker (sealed by its codec, which this client lacks): it has run.
      await expect(handle.query(statusQuery)).rejects.toThrow(/binary\/encrypted/);
      await gone.stop('SIGTERM', 30_000);
      const started = Date.now();
      const result = await runCli(['connections', 'pause', name], env, 90_000);
      expect(result.code).toBe(1);
      // Its queue probed once the status query went unanswered a second (cli/worker-check.ts).
      expect(result.stderr).toBe(
        `ebsync: no worker polls task queue '${queue}' on ${env.TEMPORAL_ADDRESS}, where this workflow runs (this deployment's queue is '${env.TEMPORAL_TASK_QUEUE}') (one polled it in the last 2 minutes, but none took a new workflow within 3 s); start one there with 'TEMPORAL_TASK_QUEUE=${queue} ebsync worker', then run this again\n`,
      );
      expect(Date.now() - started).toBeLessThan(10_000);
      // What the line says is so: a worker that starts later finds no pause to carry out.
      const back = new CliProcess(['worker'], { ...env, TEMPORAL_TASK_QUEUE: queue });
      try {
        await back.waitForLine(/worker started/, 90_000);
        await new Promise((resolve) => setTimeout(resolve, 5_000));
        const shown = await runCli(['connections', name], { ...env, TEMPORAL_TASK_QUEUE: queue });
        expect(shown.stderr).toBe('');
        expect(shown.stdout).toMatch(/^state\s+active$/m);
      } finally {
        await back.stop('SIGTERM', 30_000);
      }
    } finally {
      await handle.terminate('test done');
      await connection.close();
    }
  }, 240_000);

  it('a new connection its worker stopped a moment ago cannot answer is kept: exit 4, and active once a worker runs', async () => {
    // The worker polled a moment ago, so the check for one passes; then nobody answers.
    const queue = `kept-queue-${Date.now()}`;
    const name = `kept-${Date.now()}`;
    const local = { ...env, TEMPORAL_TASK_QUEUE: queue };
    const gone = new CliProcess(['worker'], local);
    await gone.waitForLine(/worker started/, 90_000);
    // Stopped only once connect's own check for a worker (requireWorker) counts it.
    const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS ?? '' });
    try {
      const client = new Client({ connection });
      const config = loadConfig({ ...process.env, ...local });
      const polled = () =>
        requireWorker(client, config).then(
          () => true,
          () => false,
        );
      for (let i = 0; i < 100 && !(await polled()); i++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await connection.close();
    }
    await gone.stop('SIGTERM', 30_000);
    const made = await runCli(
      ['connect', '--name', name, '--api-key', '-'],
      local,
      120_000,
      sb.apiKey,
    );
    expect(made.code, made.stderr).toBe(4);
    expect(made.stderr).toBe(
      `ebsync: no worker polls task queue '${queue}' on ${env.TEMPORAL_ADDRESS} (one polled it in the last 2 minutes, but none took a new workflow within 3 s); start one with 'npm start' (Temporal and a worker) or 'ebsync worker'; the request is kept and is carried out when a worker runs the connection's workflow\n`,
    );
    // What the line says is so: a worker that starts later makes the connection active.
    const back = new CliProcess(['worker'], local);
    try {
      await back.waitForLine(/worker started/, 90_000);
      let shown = await runCli(['connections', name], local, 60_000);
      for (let i = 0; i < 20 && !/^state\s+active$/m.test(shown.stdout); i++) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        shown = await runCli(['connections', name], local, 60_000);
      }
      expect(shown.stderr).toBe('');
      expect(shown.stdout).toMatch(/^state\s+active$/m);
      expect((await runCli(['disconnect', name], local, 60_000)).code).toBe(0);
    } finally {
      await back.stop('SIGTERM', 30_000);
    }
  }, 300_000);

  it('with the worker just stopped, connections and status name the workflow that did not answer; status still reports', async () => {
    const queue = `quiet-queue-${Date.now()}`;
    const name = `quiet-${Date.now()}`;
    const workflowId = connectionWorkflowId(name);
    const local = { ...env, TEMPORAL_TASK_QUEUE: queue };
    const worker = new CliProcess(['worker'], local);
    try {
      await worker.waitForLine(/worker started/, 90_000);
      const made = await runCli(
        ['connect', '--name', name, '--api-key', '-'],
        local,
        120_000,
        sb.apiKey,
      );
      expect(made.code).toBe(0);
    } finally {
      await worker.stop('SIGTERM', 30_000);
    }
    const timed = async (args: string[]) => {
      const started = Date.now();
      return { ...(await runCli(args, local, 90_000)), ms: Date.now() - started };
    };
    const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS ?? '' });
    try {
      const [list, one, status] = await Promise.all([
        timed(['connections']),
        timed(['connections', name]),
        timed(['status']),
      ]);
      // `connections` probes the queue once a query goes unanswered a second: no worker takes
      // the probe, so they say so within seconds; `status` waits out its 10 s deadline.
      const noWorker = `ebsync: no worker polls task queue '${queue}' on ${env.TEMPORAL_ADDRESS} (one polled it in the last 2 minutes, but none took a new workflow within 3 s); start one with 'npm start' (Temporal and a worker) or 'ebsync worker', then run this again\n`;
      expect(list.code).toBe(1);
      expect(list.stderr).toBe(noWorker);
      expect(list.ms).toBeLessThan(10_000);
      expect(one.code).toBe(1);
      expect(one.stderr).toBe(noWorker);
      expect(one.ms).toBeLessThan(10_000);
      // The rest of the report stands; the connection is shown as not answering, a problem.
      expect(status.code).toBe(1);
      expect(status.ms).toBeLessThan(25_000);
      expect(status.stdout).toMatch(new RegExp(`^  ${name}  not_answering  unknown`, 'm'));
      expect(status.stdout).toMatch(/^Mirrors$/m);
      expect(status.stdout).toMatch(/^Automation endpoints$/m);
      // The report ends with the problem; stderr says there is one.
      expect(status.stdout).toContain(
        `\n1 problem:\n  connection ${name}: the connection's workflow '${workflowId}' got no answer within 10 s: no worker runs it on task queue '${queue}'; start one ('ebsync worker' or 'npm start') and try again\n`,
      );
      expect(status.stderr).toBe('ebsync: 1 problem, listed at the end of the report\n');
    } finally {
      await new Client({ connection }).workflow.getHandle(workflowId).terminate('test done');
      await connection.close();
    }
  }, 240_000);
});

describe("ebsync connect's OAuth callback", () => {
  /** One request to the CLI's listener with any Host header (fetch sets its own). */
  function callback(target: URL, host: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: target.port,
          path: `${target.pathname}${target.search}`,
          headers: { host },
          timeout: 60_000,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  /** Starts `ebsync connect` and has the sandbox approve; the redirect is returned, not followed. */
  async function approval(name: string): Promise<{ connect: CliProcess; redirect: URL }> {
    const connect = new CliProcess(
      ['connect', '--name', name, '--redirect-port', '0', '--timeout', '60'],
      env,
    );
    const line = await connect.waitForLine(/https:\/\/\S+\/oauth\/authorize\?\S+/, 60_000);
    const url = /https:\/\/\S+/.exec(line)?.[0] ?? '';
    const answer = await got(url, {
      https: { certificateAuthority: readFileSync(sb.caFile ?? '') },
      followRedirect: false,
    });
    return { connect, redirect: new URL(answer.headers.location ?? '') };
  }

  it('ends only on the expected Host, path and state, and says connected after the exchange', async () => {
    const { connect, redirect } = await approval('callback-shop');
    const own = redirect.host;
    const wrongState = new URL(redirect);
    wrongState.searchParams.set('state', 'not-the-state');
    const otherPath = new URL(redirect);
    otherPath.pathname = '/elsewhere';
    // A page elsewhere (DNS rebinding: its own name), a forged state, another path: refused,
    // and the CLI goes on waiting.
    expect((await callback(redirect, 'evil.example')).status).toBe(400);
    expect((await callback(redirect, `evil.example:${redirect.port}`)).status).toBe(400);
    expect((await callback(wrongState, own)).status).toBe(400);
    expect((await callback(otherPath, own)).status).toBe(404);
    expect(connect.running).toBe(true);
    const page = await callback(redirect, own);
    expect(page.status).toBe(200);
    expect(page.body).toContain('ebsync is connected');
    const result = await connect.exited;
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/connected: Sandbox Photo Booths \(connection callback-shop/);
  }, 300_000);

  it('shows the browser that the connection was not made when the code exchange fails', async () => {
    const { connect, redirect } = await approval('callback-refused');
    // The right state with a code the authorization server never issued.
    const forged = new URL(redirect);
    forged.searchParams.set('code', 'eac_never_issued_0123456789');
    const page = await callback(forged, redirect.host);
    expect(page.body).not.toContain('ebsync is connected');
    expect(page.body).toContain('The connection was not made');
    const result = await connect.exited;
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/token exchange refused: invalid_grant/);
  }, 300_000);
});
