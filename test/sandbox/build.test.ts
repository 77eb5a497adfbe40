import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';

const run = promisify(execFile);

// Inside the repository (its .ebsync/ is ignored by git), so the compiled modules find
// node_modules and package.json's "type": "module" as dist/ would.
mkdirSync(join(REPO_ROOT, '.ebsync'), { recursive: true });
const out = mkdtempSync(join(REPO_ROOT, '.ebsync', 'build-test-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('npm run build', () => {
  it('compiles a sandbox that seeds leads on its worker thread', async () => {
    await run(process.execPath, [join(REPO_ROOT, 'cli/build.js'), '--out', out], {
      cwd: REPO_ROOT,
    });
    // workerFrom 0: the worker even for a few leads. From the build there is no tsx and no
    // .ts file; a worker started on a missing file left the seed waiting 60 s, then failing.
    const script = `
      const { startSandbox } = await import(${JSON.stringify(join(out, 'sandbox/server.js'))});
      const sb = await startSandbox({ http: true, port: 0, seed: { leads: 50, seed: 1, workerFrom: 0 } });
      process.stdout.write(JSON.stringify(sb.seeded));
      await sb.close();
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: REPO_ROOT,
      timeout: 30_000,
    });
    expect(JSON.parse(stdout)).toMatchObject({ leads: 50 });
  }, 90_000);
});
