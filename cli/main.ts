import { CommanderError } from 'commander';
import { reportFailure } from './errors.js';
import { buildProgram } from './program.js';

try {
  const program = await buildProgram(process.argv.slice(2));
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Commander already printed its one line; help and version are successes.
    const ok = ['commander.helpDisplayed', 'commander.version', 'commander.help'];
    process.exitCode = ok.includes(error.code) ? 0 : 2;
  } else {
    process.exitCode = reportFailure(error);
  }
}
