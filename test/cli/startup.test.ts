import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { SOURCE_FOLDERS } from '../../cli/build-state.js';
import { PACKAGE_VERSION, REPO_ROOT, cliEnv, freePort, runCli } from '../helpers/cli.js';

const run = promisify(execFile);
const tmp = mkdtempSync(join(tmpdir(), 'ebsync-startup-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Packages only a command's implementation needs: the help and the version need none. */
const HEAVY = ['@temporalio/', 'got', 'fastify', 'zod', 'pg', 'better-sqlite3', 'pino'];

/** The node_modules packages a run of `ebsync args` resolved, by name. */
async function packagesLoaded(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; names: string[] }> {
  const file = join(tmp, `imports-${args.join('-').replace(/[^\w.-]+/g, '_')}.txt`);
  const hook = join(REPO_ROOT, 'test/fixtures/record-imports.mjs');
  const result = await runCli(args, {
    NODE_OPTIONS: `--import=${hook}`,
    EBSYNC_IMPORTS_FILE: file,
    ...env,
  });
  const names = new Set<string>();
  for (const url of readFileSync(file, 'utf8').split('\n')) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (m?.[1]) names.add(m[1]);
  }
  return { code: result.code, names: [...names].sort() };
}

describe('ebsync starts without loading what it does not run', { timeout: 120_000 }, () => {
  it.for(['--version', '--help', 'sync --help', 'status --help', 'sandbox --help'])(
    'ebsync %s loads commander and none of the implementations',
    async (line) => {
      const { code, names } = await packagesLoaded(line.split(' '));
      expect(code).toBe(0);
      expect(names).toContain('commander');
      expect(names.filter((n) => HEAVY.some((h) => n === h || n.startsWith(h)))).toEqual([]);
    },
  );

  it('ebsync status loads the Temporal client, not the API client, the destinations or the sync bar', async () => {
    // Nothing listens there: status fails to connect, after loading all it would run.
    const { code, names } = await packagesLoaded(['status'], {
      TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`,
    });
    expect(code).toBe(1);
    expect(names).toContain('@temporalio/client');
    const unneeded = [
      'got',
      'fastify',
      'pg',
      'cli-progress',
      '@hubspot/api-client',
      '@jsforce/jsforce-node',
      'oauth4webapi',
    ];
    expect(names.filter((n) => unneeded.includes(n))).toEqual([]);
  });

  it('ebsync sync loads the Temporal client, not the CRM clients or database drivers the workers open destinations with', async () => {
    // Naming the destination is all the command does with it: the workers open it. Nothing
    // listens at the Temporal address, so sync fails after loading all it would run.
    const { code, names } = await packagesLoaded(
      ['sync', 'leads', '--full', '--to', `sqlite:${join(tmp, 'sync-imports.db')}`],
      { TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` },
    );
    expect(code).toBe(1);
    expect(names).toEqual(expect.arrayContaining(['@temporalio/client', 'cli-progress']));
    const unneeded = ['got', 'fastify', 'pg', 'better-sqlite3', 'jose', 'oauth4webapi'];
    expect(names.filter((n) => unneeded.includes(n))).toEqual([]);
  });

  it('a command that runs loads its implementation (the check above can fail)', async () => {
    // `sandbox` with a bad flag value fails in its action, after loading cli/sandbox.ts.
    const { code, names } = await packagesLoaded(['sandbox', '--api-key', 'nope']);
    expect(code).toBe(2);
    expect(names).toEqual(expect.arrayContaining(['fastify', 'zod']));
  });
});

/**
 * A copy of the repository's runtime folders, so the test can edit sources and builds without
 * touching the checkout that other tests run at the same time. Its node_modules is the
 * checkout's, linked.
 */
function copyOfCheckout(): string {
  const root = join(tmp, 'checkout');
  mkdirSync(root);
  for (const folder of SOURCE_FOLDERS)
    cpSync(join(REPO_ROOT, folder), join(root, folder), { recursive: true });
  for (const file of ['package.json', 'tsconfig.json'])
    cpSync(join(REPO_ROOT, file), join(root, file));
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(root, 'node_modules'));
  return root;
}

describe('the compiled tree runs only while it matches the sources', { timeout: 180_000 }, () => {
  it('runs dist/ when fresh, the TypeScript once a source changed, dist/ again after a build', async () => {
    const root = copyOfCheckout();
    const help = async (): Promise<string> => {
      const { stdout } = await run(
        process.execPath,
        [join(root, 'cli/ebsync.js'), 'status', '--help'],
        {
          cwd: root,
          env: cliEnv(),
        },
      );
      return stdout.replace(/\s+/g, ' ');
    };
    const build = () =>
      run(process.execPath, [join(root, 'cli/build.js')], { cwd: root, env: cliEnv() });
    const source = join(root, 'cli/commands/status.ts');
    const compiled = join(root, 'dist/cli/commands/status.js');
    const words = 'Connections (and their 429s over the last hour)';

    // No build yet: the TypeScript runs.
    expect(existsSync(join(root, 'dist'))).toBe(false);
    expect(await help()).toContain(words);

    // Built: what runs is the compiled file (marked here, as no source says it).
    await build();
    // The build holds the workflows bundled, and the compiled worker finds them; the worker
    // of the TypeScript finds none and bundles at its start.
    const bundled = readFileSync(join(root, 'dist/workflow-bundle.js'), 'utf8');
    expect(bundled).toContain('mirrorWorkflow');
    const { stdout: found } = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const w = await import(${JSON.stringify(join(root, 'dist/worker/worker.js'))});` +
          'console.log(JSON.stringify(w.prebuiltWorkflowBundle() ?? null));',
      ],
      { cwd: root, env: cliEnv() },
    );
    expect(JSON.parse(found)).toEqual({ codePath: join(root, 'dist/workflow-bundle.js') });
    writeFileSync(compiled, readFileSync(compiled, 'utf8').replace(words, 'FROM-DIST'));
    expect(await help()).toContain('FROM-DIST');

    // A source edited after the build: its new text runs, not the stale build.
    writeFileSync(source, readFileSync(source, 'utf8').replace(words, 'EDITED-SOURCE'));
    const afterEdit = await help();
    expect(afterEdit).toContain('EDITED-SOURCE');
    expect(afterEdit).not.toContain('FROM-DIST');

    // Built again: the compiled tree holds the edit and runs.
    await build();
    writeFileSync(compiled, readFileSync(compiled, 'utf8').replace('EDITED-SOURCE', 'FROM-DIST-2'));
    expect(await help()).toContain('FROM-DIST-2');

    // A source deleted since the build: the build no longer matches.
    writeFileSync(join(root, 'cli/extra.ts'), 'export {};\n');
    await build();
    rmSync(join(root, 'cli/extra.ts'));
    expect(await help()).toContain('EDITED-SOURCE');
  });

  it('the build covers every top-level folder of TypeScript the command runs from', () => {
    const skip = new Set([
      'node_modules',
      'dist',
      'test',
      'bench',
      'docs',
      '.ebsync',
      '.git',
      '.ci',
    ]);
    const folders = readdirSync(REPO_ROOT, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !skip.has(e.name))
      .filter((e) =>
        readdirSync(join(REPO_ROOT, e.name), { recursive: true }).some((f) =>
          String(f).endsWith('.ts'),
        ),
      )
      .map((e) => e.name);
    expect(folders.filter((f) => !SOURCE_FOLDERS.includes(f))).toEqual([]);
  });
});

describe('npx ebsync', { timeout: 120_000 }, () => {
  it('runs the checkout’s command as it is: no install into npx’s cache, no engine warnings', async () => {
    const cache = join(tmp, 'npm-cache');
    const { stdout, stderr } = await run(
      'npm',
      ['exec', '--offline', '--', 'ebsync', '--version'],
      {
        cwd: REPO_ROOT,
        env: cliEnv({ npm_config_cache: cache, npm_config_update_notifier: 'false' }),
      },
    );
    expect(stdout).toBe(`${PACKAGE_VERSION}\n`);
    expect(stderr).not.toContain('EBADENGINE');
    // npx installs a package that names the command in its own "bin" into <cache>/_npx, and
    // that install checked the engines against npm's own Node (the source of the warnings).
    expect(existsSync(join(cache, '_npx'))).toBe(false);
  });
});
