import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../config/settings.js';
import { ROUTES } from '../api/routes.js';

/** The docs promise what the code does: every setting, command and route is documented. */
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const sandboxDoc = readFileSync(new URL('../docs/sandbox.md', import.meta.url), 'utf8');

describe('documentation', () => {
  it('lists every setting in the README configuration table', () => {
    const rows = readme.split('\n').filter((line) => line.startsWith('| `'));
    const missing = SETTINGS.filter(
      (s) => !rows.some((row) => row.startsWith(`| \`${s.env}\``) && row.includes(`\`${s.path}\``)),
    ).map((s) => s.env);
    expect(missing).toEqual([]);
  });

  it('lists every command of the CLI in the README', () => {
    const main = readFileSync(new URL('../cli/main.ts', import.meta.url), 'utf8');
    const sources = ['worker', 'temporal', 'sandbox', 'connections']
      .map((f) => readFileSync(new URL(`../cli/${f}.ts`, import.meta.url), 'utf8'))
      .join('\n');
    const commands = [...sources.matchAll(/\.command\('([a-z-]+)'\)/g)].map((m) => m[1]);
    expect(commands.length).toBeGreaterThanOrEqual(9);
    expect(main).toContain('registerConnectionCommands');
    expect(commands.filter((c) => !readme.includes(`\`ebsync ${c}`))).toEqual([]);
  });

  it('says where assumed routes come from, and the route table marks each', () => {
    expect(ROUTES.every((r) => r.source === 'given' || r.source === 'assumed')).toBe(true);
    expect(sandboxDoc).toContain('`assumed`');
  });
});
