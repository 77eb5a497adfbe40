#!/usr/bin/env node
// `npm run build`, and `prepare` (so `npm ci` runs it): compiles the TypeScript of the source
// folders into dist/, one .js file per .ts file, with esbuild, the compiler tsx runs on
// every start (same per-file transform, names kept as tsx keeps them). cli/ebsync.js then
// starts from dist/ while its stamp matches the sources (cli/build-state.js), else from the
// TypeScript through tsx. Types are checked by `npm run typecheck`, not here.
//
//   node cli/build.js [--out DIR]     (default: dist/ in the repository)
//
// The tree is written beside the target and renamed into place, so a command starting
// meanwhile sees the old tree or the new one, never half of one.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { ROOT, STAMP_FILE, WORKFLOW_BUNDLE, fileStates, sourceFiles } from './build-state.js';

const started = performance.now();
let flags;
try {
  flags = parseArgs({ options: { out: { type: 'string' } } }).values;
} catch (error) {
  process.stderr.write(`build: ${error.message}; allowed: --out DIR\n`);
  process.exit(2);
}
const out = flags.out === undefined ? join(ROOT, 'dist') : resolve(flags.out);

// Stated before compiling: a file edited while the build runs then no longer matches the
// stamp, and the command runs the TypeScript instead of a build that may predate the edit.
const files = sourceFiles();
const states = fileStates(files);
const entryPoints = files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));

const staging = `${out}.tmp-${process.pid}`;
rmSync(staging, { recursive: true, force: true });
try {
  await build({
    absWorkingDir: ROOT,
    entryPoints,
    outdir: staging,
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node22.12',
    tsconfig: join(ROOT, 'tsconfig.json'),
    keepNames: true,
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
  });
  // The workflows bundled once here rather than at every worker start: webpack takes about
  // two seconds and lifts the worker's peak memory by some 150 MB. Bundled from the
  // TypeScript, as the replay tests check it; the worker uses it only while the stamp holds.
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const quiet = () => undefined;
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(ROOT, 'workflows/index.ts'),
    // The failures the workflows raise are sealed as the worker's are (worker/failure-converter.cjs).
    failureConverterPath: join(ROOT, 'worker/failure-converter.cjs'),
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet },
  });
  writeFileSync(join(staging, WORKFLOW_BUNDLE), code);
  const esbuildVersion = JSON.parse(
    readFileSync(join(ROOT, 'node_modules/esbuild/package.json'), 'utf8'),
  ).version;
  writeFileSync(
    join(staging, STAMP_FILE),
    `${JSON.stringify({ builtAt: new Date().toISOString(), esbuild: esbuildVersion, files: states })}\n`,
  );
  const old = `${out}.old-${process.pid}`;
  if (existsSync(out)) renameSync(out, old);
  renameSync(staging, out);
  rmSync(old, { recursive: true, force: true });
} catch (error) {
  rmSync(staging, { recursive: true, force: true });
  process.stderr.write(`build: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
const ms = Math.round(performance.now() - started);
process.stdout.write(
  `built ${relative(process.cwd(), out) || '.'}/ from ${entryPoints.length} TypeScript files in ${ms} ms\n`,
);
