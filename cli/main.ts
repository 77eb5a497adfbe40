import { CommanderError } from 'commander';
import { buildProgram } from './program.js';

// `ebsync … | head` closes the reading end once it has enough; Node then reports EPIPE as an
// error event on the stream, which unhandled crashes with a stack trace. The reader leaving is
// the user's choice, not a failure of the command: stop writing and end as on Ctrl-C, where
// commands that hold work (a worker, the sandbox, Temporal) stop by their own handlers.
let readerGone = false;
function onOutputError(error: NodeJS.ErrnoException): void {
  if (error.code !== 'EPIPE') throw error;
  if (readerGone) return;
  readerGone = true;
  if (process.listenerCount('SIGINT') > 0) process.kill(process.pid, 'SIGINT');
  else process.exit(process.exitCode ?? 0);
}
process.stdout.on('error', onOutputError);
process.stderr.on('error', onOutputError);

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Commander already printed its one line; help and version asked for are successes. A
    // group of commands given none (`ebsync schedule`) gets its help on stderr with an exit
    // code of 1 from commander: bad input, as a mistyped command is.
    const ok = ['commander.helpDisplayed', 'commander.version', 'commander.help'];
    process.exitCode = ok.includes(error.code) && error.exitCode === 0 ? 0 : 2;
  } else {
    // Loaded only here: it reads the configuration's error type, and with it zod.
    const { reportFailure } = await import('./errors.js');
    process.exitCode = reportFailure(error);
  }
}
