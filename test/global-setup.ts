import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode } from '@temporalio/worker';
import { writeFile } from 'node:fs/promises';
import type { TestProject } from 'vitest/node';
import { findTemporalCli } from '../worker/temporal-cli.js';
import { workflowsPath } from '../worker/worker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalCliPath: string;
    workflowBundlePath: string;
  }
}

/**
 * Starts ONE real Temporal dev server for the whole run and bundles the workflows once;
 * test files connect to it by address and load the bundle by path.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  const executable = await findTemporalCli({
    onProgress: (line) => process.stderr.write(`[temporal] ${line}\n`),
  });
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable, log: { format: 'pretty', level: 'error' } },
  });
  const dir = mkdtempSync(join(tmpdir(), 'ebsync-test-'));
  const bundlePath = join(dir, 'workflow-bundle.js');
  const { code } = await bundleWorkflowCode({
    workflowsPath: workflowsPath(),
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
