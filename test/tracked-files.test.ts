import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * What `npm ci` and the build make must never be committed. A committed `node_modules`
 * symlink (to another checkout's) was: `npm ci` in a fresh clone then emptied the directory
 * it pointed to, the other checkout's dependencies, before making its own.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('the repository tracks no generated paths', () => {
  it('has no node_modules, dist or .ebsync in git, as a directory or a symlink', () => {
    const tracked = execFileSync(
      'git',
      ['ls-files', '-z', '--', 'node_modules', 'dist', '.ebsync'],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    )
      .split('\0')
      .filter(Boolean);
    expect(tracked).toEqual([]);
  });

  it('ignores node_modules and dist whether they are directories or symlinks', () => {
    const ignored = execFileSync(
      'git',
      ['check-ignore', '--no-index', '--', 'node_modules', 'dist', '.ebsync'],
      { cwd: ROOT, encoding: 'utf8' },
    )
      .split('\n')
      .filter(Boolean);
    expect(ignored).toEqual(['node_modules', 'dist', '.ebsync']);
  });
});
