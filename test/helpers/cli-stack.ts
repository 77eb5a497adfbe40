import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../sandbox/server.js';
import { CliProcess, runCli } from './cli.js';

/**
 * What a CLI test runs ebsync against, as a user would have it: a sandbox over HTTPS, the run's
 * Temporal dev server, an `ebsync worker` on a task queue of its own, and the environment
 * that points each `ebsync …` command at them. Apart from cli.ts, which the benchmarks use.
 */
export interface CliStack {
  /** A temp dir of the stack's own (the sandbox's certificate, the data dir): removed on close. */
  dir: string;
  sb: Sandbox;
  /** EBS_BASE_URL, EBS_CA_FILE, EBS_API_KEY (unless left out), TEMPORAL_*, EBSYNC_DATA_DIR… */
  env: Record<string, string>;
  worker: CliProcess;
  /** Stops the worker and the sandbox and removes the dir. */
  close(): Promise<void>;
}

export interface CliStackOptions {
  /** Names the temp dir and the task queue (a queue per stack: the dev server is shared). */
  name: string;
  /** The sandbox's options (its certificate is kept in the stack's dir). */
  sandbox?: Omit<SandboxOptions, 'certDir'>;
  /** The integration key as EBS_API_KEY (default true; false for OAuth connections). */
  apiKey?: boolean;
  /** Settings beyond the defaults, once the sandbox runs (an OAuth app's client id…). */
  settings?: (sb: Sandbox) => Record<string, string>;
  /**
   * `ebsync connect --api-key` once the worker runs, under this name ('' for the default
   * connection); it must exit 0. Absent: nothing is connected.
   */
  connect?: string;
}

export async function startCliStack(options: CliStackOptions): Promise<CliStack> {
  const dir = mkdtempSync(join(tmpdir(), `ebsync-${options.name}-`));
  let sb: Sandbox | undefined;
  let worker: CliProcess | undefined;
  const close = async (): Promise<void> => {
    await worker?.stop('SIGTERM', 30_000);
    await sb?.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    sb = await startSandbox({ ...options.sandbox, certDir: join(dir, 'cert') });
    const env: Record<string, string> = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `${options.name}-${Date.now()}`,
      EBS_BASE_URL: sb.baseUrl,
      ...(options.apiKey === false ? {} : { EBS_API_KEY: sb.apiKey }),
      EBS_CA_FILE: sb.caFile ?? '',
      // The CLI and the worker share the development encryption key kept here.
      EBSYNC_DATA_DIR: join(dir, 'data'),
      ...options.settings?.(sb),
    };
    worker = new CliProcess(['worker'], env);
    await worker.waitForLine(/worker started/, 90_000);
    if (options.connect !== undefined) {
      const name = options.connect === '' ? [] : ['--name', options.connect];
      const connect = await runCli(['connect', '--api-key', ...name], env);
      if (connect.code !== 0) {
        throw new Error(`ebsync connect exited ${connect.code}: ${connect.stderr}`);
      }
    }
    return { dir, sb, env, worker, close };
  } catch (error) {
    await close();
    throw error;
  }
}
