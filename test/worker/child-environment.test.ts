import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { CliProcess, temporalOnFreePorts } from '../helpers/cli.js';

/**
 * The Temporal dev server ebsync starts gets an allow-listed environment, none of ebsync's
 * secrets (issue 30, item 12): read from the running child's /proc/<pid>/environ.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-child-env-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The environment of the process `pid` started whose command is `name`. */
function childEnvironment(pid: number, name: string): Record<string, string> | undefined {
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid !== pid || comm !== name) continue;
    const pairs = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').filter(Boolean);
    return Object.fromEntries(
      pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]),
    );
  }
  return undefined;
}

describe.runIf(process.platform === 'linux')('the Temporal dev server child', () => {
  it("gets none of ebsync's settings, its secrets among them", async () => {
    const secrets = {
      EBSYNC_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
      EBS_API_KEY: 'ik_child_env_secret_key',
      EBSYNC_ADMIN_TOKEN: 'child-env-admin-token-0123456789',
    };
    const cliPath = inject('temporalCliPath');
    const server = new CliProcess(await temporalOnFreePorts(join(dir, 't.db')), {
      EBSYNC_DATA_DIR: join(dir, 'data'),
      ...(cliPath ? { TEMPORAL_CLI_PATH: cliPath } : {}),
      ...secrets,
    });
    try {
      await server.waitForLine(/^Temporal dev server ready at /, 90_000);
      const env = childEnvironment(server.child.pid ?? 0, 'temporal');
      expect(env, 'no temporal child found').toBeDefined();
      expect(Object.keys(env ?? {}).filter((k) => /^(EBS_|EBSYNC_|TEMPORAL_)/.test(k))).toEqual([]);
      const text = JSON.stringify(env);
      for (const value of Object.values(secrets)) expect(text).not.toContain(value);
      expect(env?.PATH).toBe(process.env.PATH);
    } finally {
      await server.stop('SIGTERM', 20_000).catch(() => undefined);
      server.killAll();
    }
  }, 150_000);
});
