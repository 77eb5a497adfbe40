import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeDataDir } from '../store/private-files.js';
import { processRuns } from '../worker/dev-server-guard.js';
import { UserError } from './errors.js';

/**
 * One `ebsync dev` per data directory: a second one on the same directory used to start a
 * second worker, a status page on a random port and no webhook receiver. `dev.pid` in the
 * data directory holds the running one's process id; a file whose process is gone (a crash,
 * a kill -9) is stale and taken over. Returns the release, which removes the file if it is
 * still ours.
 */
export function lockDataDir(dataDir: string): () => void {
  // Not a recursive mkdir: under /proc that loops for ever, and `npm start` hung silent.
  makeDataDir(dataDir);
  const file = join(dataDir, 'dev.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      const release = (): void => {
        process.off('exit', release);
        try {
          if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
        } catch {
          // already gone
        }
      };
      // Also when something ends the process with process.exit().
      process.on('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let pid = NaN;
    try {
      pid = Number(readFileSync(file, 'utf8').trim());
    } catch {
      // removed in between: try again
    }
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && processRuns(pid)) {
      throw new UserError(
        `ebsync dev is already running on data dir ${resolve(dataDir)} (pid ${pid}); ` +
          'stop it first, or give this one another EBSYNC_DATA_DIR',
      );
    }
    try {
      unlinkSync(file);
    } catch {
      // another start took it over first: the next attempt sees its file
    }
  }
  throw new UserError(`could not take ${file}: another ebsync dev is starting on this data dir`);
}
