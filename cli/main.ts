import { CommanderError } from 'commander';
import { buildProgram } from './program.js';

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Commander already printed its one line; help and version are successes.
    const ok = ['commander.helpDisplayed', 'commander.version', 'commander.help'];
    process.exitCode = ok.includes(error.code) ? 0 : 2;
  } else {
    // Loaded only here: it reads the configuration's error type, and with it zod.
    const { reportFailure } = await import('./errors.js');
    process.exitCode = reportFailure(error);
  }
}
