import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import got from 'got';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { createLead } from '../../sandbox/resources/leads.js';
import { CliProcess, runCli } from '../helpers/cli.js';

/** `ebsync connect`, `connections` and `disconnect` as a user runs them, with a worker running. */
let sb: Sandbox;
let dir: string;
let env: Record<string, string>;
let worker: CliProcess;
let clientId: string;
let appId: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-connect-'));
  sb = await startSandbox({ autoApprove: true, certDir: join(dir, 'cert') });
  createLead(sb.ctx, sb.businessId, { email: 'first@example.com' }, {});
  const app = sb.admin.createApp({
    name: 'ebsync',
    redirectUris: ['http://127.0.0.1/callback'],
    permissions: ['lead_read', 'offerings_read'],
  });
  clientId = app.client_id;
  appId = app.id;
  env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `connect-cli-${Date.now()}`,
    EBS_BASE_URL: sb.baseUrl,
    EBS_AUTH_URL: sb.authUrl,
    EBS_CA_FILE: sb.caFile ?? '',
    EBS_CLIENT_ID: clientId,
    // The CLI and the worker share the development encryption key kept here.
    EBSYNC_DATA_DIR: join(dir, 'data'),
    EBSYNC_LOG_LEVEL: 'info',
  };
  worker = new CliProcess(['worker'], env);
  await worker.waitForLine(/worker started/, 90_000);
}, 120_000);

afterAll(async () => {
  await worker?.stop('SIGTERM', 30_000);
  await sb?.close();
  rmSync(dir, { recursive: true, force: true });
});

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
      /connected: Sandbox Photo Booths \(connection shop, installed_app, 2 permissions\)/,
    );
    expect(result.stdout).not.toContain(sb.apiKey);
  }, 120_000);

  it('connects with an integration key after one cheap call, and refuses a bad key in one line', async () => {
    const ok = await runCli(['connect', '--name', 'keyed', '--api-key', sb.apiKey], env, 60_000);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(
      /connected: Sandbox Photo Booths \(connection keyed, integration_key/,
    );

    const bad = await runCli(
      ['connect', '--name', 'bad', '--api-key', 'ik_not_a_real_key_123'],
      env,
      60_000,
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/refused the credential/);
    expect(bad.stderr).not.toContain('ik_not_a_real_key_123');
  }, 120_000);

  it('lists connections with their state, and disconnect revokes the grant at the service', async () => {
    const listed = await runCli(['connections', '--json'], env, 60_000);
    expect(listed.code).toBe(0);
    const all = JSON.parse(listed.stdout) as {
      connectionId: string;
      state: string;
      kind: string;
    }[];
    expect(all.map((c) => [c.connectionId, c.state, c.kind])).toEqual([
      ['keyed', 'active', 'integration_key'],
      ['shop', 'active', 'installed_app'],
    ]);
    expect(listed.stdout).not.toMatch(/accessToken|refreshToken|apiKey/);

    const one = await runCli(['connections', 'shop'], env, 60_000);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/^state\s+active$/m);
    expect(one.stdout).toMatch(/^base URL\s+https:\/\/127\.0\.0\.1:\d+\/api\/v1\/$/m);
    expect(one.stdout).toMatch(/^permissions\s+lead_read offerings_read$/m);

    const gone = await runCli(['disconnect', 'shop'], env, 60_000);
    expect(gone.code).toBe(0);
    expect(gone.stdout).toMatch(/disconnected: shop/);
    expect(sb.admin.grants({ appId }).every((g) => g.revoked_at !== null)).toBe(true);

    const after = await runCli(['connections'], env, 60_000);
    expect(after.stdout).toMatch(/^keyed\s+active/m);
    expect(after.stdout).not.toMatch(/^shop/m);
    const missing = await runCli(['disconnect', 'nope'], env, 60_000);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no connection named 'nope'/);
  }, 120_000);
});
