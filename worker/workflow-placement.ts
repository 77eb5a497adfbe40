/** Temporal's limit on one workflow activation's CPU; past it the SDK fails the task. */
export const WORKFLOW_ACTIVATION_LIMIT = '5s';

/** The SDK's own switch for a debugger's breakpoints, read as the SDK reads it. */
export function sdkDebugSwitch(value = process.env.TEMPORAL_DEBUG): boolean {
  return ['1', 't', 'true'].includes((value ?? '').toLowerCase());
}

/**
 * Options for Worker.create. `isolateExecutionTimeout` is not in the SDK's WorkerOptions type,
 * but Worker.create takes it from the options it is given over its default (5 s, or unlimited
 * under `debugMode`); test/worker/workflow-placement.test.ts checks that it still does.
 */
export interface WorkflowPlacement {
  debugMode?: boolean;
  isolateExecutionTimeout?: string;
}

/**
 * Where a worker runs workflow code. The SDK runs it in an isolate of its own on a worker
 * thread unless `debugMode` is set; then it runs in the main isolate, through the same VM
 * sandbox (one reused V8 context, the same deterministic globals). That thread costs a worker
 * about 35 MiB: idle workers held 199-208 MiB with it and 166 MiB without, and three
 * 10,000-lead passes peaked at 249-252 MiB against 218-227 MiB. Workflow activations take
 * milliseconds beside a pass's activities, so by default they share the main thread.
 *
 * `debugMode` also lifts the limit on how long one activation may run. It is set again here,
 * so a workflow stuck in a loop still has its task failed after 5 s ("Script execution timed
 * out"), as it would on the thread; under TEMPORAL_DEBUG the SDK's unlimited time stands, for
 * breakpoints.
 *
 * What the SDK installs for its sandbox is then process-wide, as it is thread-wide otherwise:
 * a V8 promise hook that asks each new promise whether a workflow made it, an
 * Error.prepareStackTrace that maps workflow frames through the bundle's source map (others
 * keep Node's), and an unhandledRejection listener that fails the workflow a rejection came
 * from, and for one from elsewhere prints it and ends the process, as Node would. The hook and
 * the activations cost the main thread about 6 % of a pass's CPU; pass times stayed within
 * their noise (docs/mirror.md).
 */
export function workflowPlacement(
  onThread: boolean,
  sdkDebug = sdkDebugSwitch(),
): WorkflowPlacement {
  if (onThread) return {};
  if (sdkDebug) return { debugMode: true };
  return { debugMode: true, isolateExecutionTimeout: WORKFLOW_ACTIVATION_LIMIT };
}
