import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import layout from './layout.json' with { type: 'json' };

/** Deepest a product file sits below its top-level folder (e.g. sandbox/crm/hubspot/x.ts). */
const MAX_DEPTH = 4;

/** `**` style target (`api/schemas/**`, `workflows/*-types.ts`) as it is written in an import. */
const asImported = (target) => target.replace(/\.ts$/, '.js');

/**
 * config/ holds schemas, loading and defaults: no database driver and no file system, so the
 * drivers cannot drift back out of store/ (docs/architecture.md).
 */
const CONFIG_DRIVERS = ['pg', 'pg/*', 'better-sqlite3', 'better-sqlite3/*'];
const CONFIG_FILE_SYSTEM = ['node:fs', 'node:fs/*', 'fs', 'fs/*'];
/** config/ files that may read files: loading the settings file (EBSYNC_CONFIG) is config's job. */
const CONFIG_FILE_READERS = ['config/load.ts'];
const CONFIG_NO_IO =
  'config/ holds schemas, loading and defaults: database drivers and file I/O live in store/ (docs/architecture.md)';

/**
 * DESIGN.md's "may import" table (layout.json) as no-restricted-imports, one block per folder
 * and depth, so `../` counts exactly: a file in activities/mirror/ leaves its folder with
 * `../../`. Every top-level folder the row does not name is refused; files the row names
 * (`files`, and the listed crossings) are let through by negated patterns; `typesFrom`
 * folders pass with `import type` only. test/layout.test.ts reads the same table.
 */
function layoutBoundaries() {
  const folders = Object.keys(layout.folders);
  const others = [...folders, 'test', 'bench'];
  return folders
    .flatMap((folder) => {
      const row = layout.folders[folder];
      const files = [
        ...(row.files ?? []),
        ...layout.crossings.filter((c) => c.folder === folder).flatMap((c) => c.targets),
      ];
      const may = [
        ...row.imports.map((f) => `${f}/`),
        ...(row.typesFrom ?? []).map((f) => `${f}/ (import type only)`),
        ...files,
      ];
      const message = `${folder}/ may import only its own files${may.map((m) => `, ${m}`).join('')} (layout.json, DESIGN.md's table)${row.why ? `: ${row.why}` : ''}`;
      return Array.from({ length: MAX_DEPTH }, (_, depth) => {
        const up = '../'.repeat(depth + 1);
        const refused = others.filter(
          (f) => f !== folder && !row.imports.includes(f) && !(row.typesFrom ?? []).includes(f),
        );
        const patterns = [
          {
            group: [
              ...refused.map((f) => `${up}${f}/**`),
              // A folder's files are let through with the folder itself (gitignore rules).
              ...files.flatMap((target) =>
                target.endsWith('/**')
                  ? [`!${up}${target.slice(0, -2)}`, `!${up}${target}`]
                  : [`!${up}${asImported(target)}`],
              ),
            ],
            message,
          },
        ];
        if (row.typesFrom?.length) {
          patterns.push({
            group: row.typesFrom.map((f) => `${up}${f}/**`),
            allowTypeImports: true,
            message,
          });
        }
        if (folder === 'config') {
          patterns.push({
            group: [...CONFIG_DRIVERS, ...CONFIG_FILE_SYSTEM],
            message: CONFIG_NO_IO,
          });
        }
        if (folder === 'workflows') {
          // Workflow code is replayed: no Node built-ins.
          patterns.push({
            group: ['node:*'],
            message: 'workflows are deterministic: no Node built-ins',
          });
        }
        const block = {
          files: [`${folder}/${'*/'.repeat(depth)}*.ts`],
          rules: { 'no-restricted-imports': ['error', { patterns }] },
        };
        if (folder === 'config' && depth === 0) {
          // The later block's rule replaces this one's for the file readers: the same patterns
          // with the drivers still refused and the file system allowed.
          const readers = [
            ...patterns.slice(0, -1),
            { group: CONFIG_DRIVERS, message: CONFIG_NO_IO },
          ];
          return [
            block,
            {
              files: CONFIG_FILE_READERS,
              rules: { 'no-restricted-imports': ['error', { patterns: readers }] },
            },
          ];
        }
        if (folder !== 'workflows' || depth > 0) return [block];
        // A contract file is what activities import: it may not bring workflow code along.
        return [block, contractBlock(patterns)];
      });
    })
    .flat();
}

/**
 * workflows/*-types.ts: the workflows' rules, and values only from other contract files and
 * @temporalio/workflow's define* helpers (types from anywhere the workflows may take them).
 */
function contractBlock(workflowPatterns) {
  const message =
    'workflows/*-types.ts hold contracts only: values from other -types files and ' +
    "@temporalio/workflow's define* helpers (docs/architecture.md)";
  return {
    files: ['workflows/*-types.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@temporalio/workflow',
              allowImportNames: ['defineQuery', 'defineSignal', 'defineUpdate'],
              allowTypeImports: true,
              message,
            },
          ],
          patterns: [
            ...workflowPatterns,
            { group: ['./*', '!./*-types.js'], allowTypeImports: true, message },
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.ebsync/', 'coverage/'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/explicit-module-boundary-types': 'off',
    },
  },
  ...layoutBoundaries(),
  {
    // Tests read arbitrary JSON off the wire; asserting on it is their job.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
