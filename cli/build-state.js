// What the compiled tree (dist/) was built from, and whether it still matches the sources.
// Plain JavaScript: cli/ebsync.js reads it at every start, before anything is compiled, and
// cli/build.js writes the stamp it checks.
//
// The rule: dist/ runs only when every file it was built from still has the size and
// modification time it had when the build started. An edit, a checkout, a pull or a deleted
// file changes one of them, and the command then runs the TypeScript through tsx as before.
// No content is hashed: ~250 stat calls take about 2 ms, hashing the same files about 10.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { URL, fileURLToPath } from 'node:url';

/** The repository root: this file is cli/build-state.js. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The folders the ebsync command runs from: DESIGN.md's table without test/ and bench/. */
export const SOURCE_FOLDERS = [
  'config',
  'api',
  'records',
  'workflows',
  'activities',
  'destinations',
  'store',
  'webhooks',
  'worker',
  'cli',
  'sandbox',
];

/** Files outside those folders whose change changes what the build makes. */
const BUILD_INPUTS = ['package.json', 'tsconfig.json', 'node_modules/esbuild/package.json'];

/** The stamp's name inside the compiled tree. */
export const STAMP_FILE = 'build-stamp.json';

/** The workflows bundled for the worker, inside the compiled tree. */
export const WORKFLOW_BUNDLE = 'workflow-bundle.js';

/** Every file of the source folders and the build inputs, relative to `root`, sorted. */
export function sourceFiles(root = ROOT) {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.push(path);
    }
  };
  for (const folder of SOURCE_FOLDERS) walk(folder);
  return [...files, ...BUILD_INPUTS].sort();
}

/** Each file as the stamp records it: [path, size, mtimeMs]. */
export function fileStates(files, root = ROOT) {
  return files.map((file) => {
    const stat = statSync(join(root, file));
    return [file, stat.size, stat.mtimeMs];
  });
}

/**
 * Whether the compiled tree at `dist` was built from the files as they are now: its stamp
 * exists and every file it lists has the size and modification time the stamp recorded.
 */
export function isFresh(dist = join(ROOT, 'dist'), root = ROOT) {
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(join(dist, STAMP_FILE), 'utf8'));
  } catch {
    return false;
  }
  if (!Array.isArray(stamp?.files) || stamp.files.length === 0) return false;
  for (const [file, size, mtimeMs] of stamp.files) {
    let stat;
    try {
      stat = statSync(join(root, file));
    } catch {
      return false;
    }
    if (stat.size !== size || stat.mtimeMs !== mtimeMs) return false;
  }
  return true;
}
