import { runAction } from './errors.js';

/**
 * How long a command that runs until stopped (`dev`, `worker`, `sandbox`, `temporal`,
 * `postgres`, `webhooks serve`, `status --serve`) may take to end once all it started has
 * closed. Nothing of ebsync's is left then; a handle a library keeps open would hold the
 * process, and whatever waits on it (a terminal, a service manager, a script), for as long
 * as it lasts: `ebsync dev` was once seen alive 8 s after its close sequence had ended.
 */
const STOPPED_EXIT_MS = 2_000;

/**
 * Called once a long-running command's work has ended: if the process is still there
 * STOPPED_EXIT_MS later, it says what kinds of handle held it (kinds only, no addresses or data)
 * and exits with the command's exit code. The timer itself holds nothing.
 */
function exitOnceStopped(): void {
  const timer = setTimeout(() => {
    const held = [...new Set(process.getActiveResourcesInfo())].join(', ') || 'nothing named';
    process.stderr.write(
      `ebsync: stopped, but the process was still held open ${STOPPED_EXIT_MS / 1000} s later (${held}); ending it\n`,
    );
    process.exit(process.exitCode ?? 0);
  }, STOPPED_EXIT_MS);
  timer.unref();
}

/** runAction for a command that runs until stopped: it then ends as exitOnceStopped says. */
export async function runUntilStopped(action: () => Promise<void>): Promise<void> {
  await runAction(action);
  exitOnceStopped();
}
