import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

/**
 * The boundary lint (eslint.config.js, from layout.json) run through ESLint's own API on one
 * import line, as if it stood in a real file: a wrong import is an error naming the rule, a
 * right one is not. Only no-restricted-imports is asked about; the type-aware rules would
 * otherwise complain that the line's import is unused.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

async function boundaryErrors(file: string, line: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: ROOT });
  const [result] = await eslint.lintText(`${line}\n`, { filePath: `${ROOT}${file}` });
  return (result?.messages ?? [])
    .filter((m) => m.ruleId === 'no-restricted-imports')
    .map((m) => `${file}:${m.line}:${m.column} ${m.message}`);
}

describe('boundary lint (DESIGN.md\'s "may import" table)', { timeout: 60_000 }, () => {
  it('refuses an activity importing workflow code, and allows its -types contract', async () => {
    const wrong = await boundaryErrors(
      'activities/connection-tokens.ts',
      "import '../workflows/connection.js';",
    );
    expect(wrong).toHaveLength(1);
    expect(wrong[0]).toMatch(
      /'\.\.\/workflows\/connection\.js' import is restricted .* activities\/ may import only its own files, .*workflows\/\*-types\.ts/,
    );
    expect(
      await boundaryErrors(
        'activities/connection-tokens.ts',
        "import '../workflows/connection-types.js';",
      ),
    ).toEqual([]);
  });

  it('counts ../ by depth: a nested activity file leaving its folder', async () => {
    expect(
      await boundaryErrors('activities/mirror/pass.ts', "import '../../webhooks/receiver.js';"),
    ).toHaveLength(1);
    expect(
      await boundaryErrors('activities/mirror/pass.ts', "import '../../store/index.js';"),
    ).toEqual([]);
  });

  it('lets the sandbox use the route table and schemas of api/ and nothing else', async () => {
    expect(await boundaryErrors('sandbox/app.ts', "import '../api/schemas/leads.js';")).toEqual([]);
    expect(await boundaryErrors('sandbox/app.ts', "import '../api/transport.js';")).toHaveLength(1);
  });

  it('keeps workflow code out of contract files (workflows/*-types.ts)', async () => {
    const file = 'workflows/connection-types.ts';
    expect(
      await boundaryErrors(file, "import { countLimit } from './rate-limit.js';"),
    ).toHaveLength(1);
    expect(
      await boundaryErrors(file, "import { proxyActivities } from '@temporalio/workflow';"),
    ).toHaveLength(1);
    expect(
      await boundaryErrors(
        file,
        "import { defineSignal } from '@temporalio/workflow';\nimport { LIMIT_WINDOW_MS } from './rate-limit-types.js';",
      ),
    ).toEqual([]);
  });

  it('keeps database drivers and the file system out of config/, but lets load.ts read its file', async () => {
    const driver = await boundaryErrors('config/schema.ts', "import pg from 'pg';");
    expect(driver).toHaveLength(1);
    expect(driver[0]).toMatch(
      /'pg' import is restricted .* database drivers and file I\/O live in store\//,
    );
    const refused: [file: string, line: string][] = [
      ['config/settings.ts', "import Database from 'better-sqlite3';"],
      ['config/settings.ts', "import { statSync } from 'node:fs';"],
      ['config/load.ts', "import pg from 'pg';"],
      // The table still holds for the file reader: config/ imports no other folder.
      ['config/load.ts', "import '../store/errors.js';"],
    ];
    for (const [file, line] of refused) {
      expect(await boundaryErrors(file, line), `${file}: ${line}`).toHaveLength(1);
    }
    const reader = "import { readFileSync } from 'node:fs';";
    expect(await boundaryErrors('config/load.ts', reader)).toEqual([]);
  });

  it('lets workflows import activities as types only', async () => {
    expect(
      await boundaryErrors(
        'workflows/health.ts',
        "import type { createHealthActivities } from '../activities/health.js';",
      ),
    ).toEqual([]);
    expect(
      await boundaryErrors('workflows/health.ts', "import '../activities/health.js';"),
    ).toHaveLength(1);
  });
});
