import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, runCli } from '../helpers/cli.js';

/**
 * A child ebsync starts that cannot be started (issue 30, item 13): its spawn 'error' is the
 * command's failure, one line, never an unhandled 'error' event that ends the process with a
 * stack trace. (The Postgres children: test/store/postgres-server.test.ts.)
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-spawn-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a child that cannot be spawned', () => {
  it('is one line from `ebsync temporal`, not a crash', async () => {
    // Executable by its mode, but its interpreter is missing: execve refuses it (ENOENT).
    const cli = join(dir, 'temporal');
    writeFileSync(cli, '#!/nonexistent/interpreter\n', { mode: 0o755 });
    const result = await runCli(
      ['temporal', '--port', String(await freePort()), '--ui-port', String(await freePort())],
      { EBSYNC_DATA_DIR: join(dir, 'data'), TEMPORAL_CLI_PATH: cli },
      60_000,
    );
    expect(result.stderr).not.toMatch(/Unhandled 'error' event|^\s+at /m);
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^ebsync: the Temporal dev server could not be started: spawn .*temporal E\w+$/,
      ),
    ]);
    expect(result.code).toBe(1);
  });
});
