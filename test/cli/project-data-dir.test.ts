import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { displayPath } from '../../cli/sync.js';
import { cliEnv, REPO_ROOT } from '../helpers/cli.js';

/**
 * A clone's subfolder (`docs/`): `npm start` runs in the project's folder, whichever one it was
 * typed in, and `npx ebsync` where the shell is. So `npx ebsync status` there made a data dir of
 * its own in the subfolder (a key of its own, opening none of the workflows `npm start` made),
 * and the query `npm start` printed (`sqlite3 .ebsync/mirror.db …`) named no file from there.
 */
let project: string;
let sub: string;
beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'ebsync-project-'));
  sub = join(project, 'docs');
  mkdirSync(sub);
});
afterAll(() => rmSync(project, { recursive: true, force: true }));

describe('a command npm runs in a subfolder of its project', () => {
  it("keeps its data in the project's .ebsync, not the subfolder's", () => {
    const result = spawnSync(process.execPath, [join(REPO_ROOT, 'cli/ebsync.js'), 'status'], {
      cwd: sub,
      encoding: 'utf8',
      timeout: 60_000,
      env: cliEnv({
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: `project-data-dir-${Date.now()}`,
        npm_config_local_prefix: project,
        INIT_CWD: sub,
      }),
    });
    expect(result.stdout, result.stderr).toContain(
      `Webhook inbox (sqlite:${join(project, '.ebsync', 'store.db')})`,
    );
    expect(existsSync(join(project, '.ebsync', 'encryption-keys'))).toBe(true);
    expect(existsSync(join(sub, '.ebsync'))).toBe(false);
  }, 90_000);

  it('shows a path to type relative to where npm was typed, not the project folder', () => {
    const saved = { cwd: process.cwd(), env: { ...process.env } };
    try {
      process.chdir(project);
      process.env.npm_config_local_prefix = project;
      process.env.INIT_CWD = sub;
      // From docs/, `.ebsync/mirror.db` is no file: the path is given whole.
      const file = join(project, '.ebsync', 'mirror.db');
      expect(displayPath(file)).toBe(file);
      expect(displayPath(join(sub, 'mine.db'))).toBe('mine.db');
    } finally {
      process.chdir(saved.cwd);
      process.env = saved.env;
    }
  });
});
