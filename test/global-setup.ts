import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode } from '@temporalio/worker';
import { writeFile } from 'node:fs/promises';
import type { TestProject } from 'vitest/node';
import { startPostgresServer, type PostgresServer } from '../worker/postgres-server.js';
import { findTemporalCli } from '../worker/temporal-cli.js';
import { FAIRNESS_ARGS } from '../worker/dev-server.js';
import { workflowBundleSources } from '../worker/worker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalCliPath: string;
    workflowBundlePath: string;
    /** A database on the run's own Postgres; tests create their own databases beside it. */
    postgresUrl: string;
  }
}

/** A real Postgres in a temp directory, for the run; removed when the run ends. */
async function startTestPostgres(): Promise<PostgresServer> {
  const started = Date.now();
  const server = await startPostgresServer({
    dir: mkdtempSync(join(tmpdir(), 'ebsync-pg-')),
    ephemeral: true,
    // The one initdb makes: no CREATE DATABASE on the way to the first test.
    database: 'postgres',
  });
  process.stderr.write(`[postgres] 127.0.0.1:${server.port} (${Date.now() - started} ms)\n`);
  return server;
}

/**
 * Starts ONE real Temporal dev server and one Postgres for the whole run (side by side) and
 * bundles the workflows once; test files connect to them by address and load the bundle by
 * path.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [postgres, temporal] = await Promise.allSettled([
    startTestPostgres(),
    setupTemporal(project),
  ]);
  if (postgres.status === 'rejected' || temporal.status === 'rejected') {
    // Whichever did start is stopped before the run reports the failure.
    if (postgres.status === 'fulfilled') await postgres.value.stop();
    if (temporal.status === 'fulfilled') await temporal.value();
    throw postgres.status === 'rejected'
      ? postgres.reason
      : (temporal as PromiseRejectedResult).reason;
  }
  project.provide('postgresUrl', postgres.value.url);
  return async () => {
    await Promise.all([temporal.value(), postgres.value.stop()]);
  };
}

async function setupTemporal(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  const executable = await findTemporalCli({
    onProgress: (line) => process.stderr.write(`[temporal] ${line}\n`),
  });
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable, log: { format: 'pretty', level: 'error' }, extraArgs: FAIRNESS_ARGS },
  });
  const dir = mkdtempSync(join(tmpdir(), 'ebsync-test-'));
  const bundlePath = join(dir, 'workflow-bundle.js');
  const { code } = await bundleWorkflowCode({
    ...workflowBundleSources(),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  await writeFile(bundlePath, code);
  project.provide('temporalAddress', env.address);
  project.provide('temporalCliPath', executable.type === 'existing-path' ? executable.path : '');
  project.provide('workflowBundlePath', bundlePath);
  process.stderr.write(
    `[temporal] dev server at ${env.address}, bundle built (${Date.now() - started} ms)\n`,
  );
  return async () => {
    await env.teardown();
    rmSync(dir, { recursive: true, force: true });
  };
}
