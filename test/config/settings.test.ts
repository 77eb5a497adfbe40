import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../config/settings.js';

/** The README's configuration table says what config/settings.ts says, word for word. */
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const cells = (row: string): string[] =>
  row
    .split(/(?<!\\)\|/)
    .slice(1, -1)
    .map((cell) => cell.trim());

describe('the README configuration table', () => {
  it.each(SETTINGS.map((s) => [s.env, s] as const))('%s: its row is the settings entry', (_, s) => {
    const row = readme.split('\n').find((line) => line.startsWith(`| \`${s.env}\` `));
    expect(row, `no README row for ${s.env}`).toBeDefined();
    const secret = s.secret ? ' **Secret**: masked in errors and logs.' : '';
    expect(cells(row ?? '')).toEqual([
      `\`${s.env}\``,
      `\`${s.path}\``,
      s.default ?? '',
      `${s.description}${secret}`,
    ]);
  });

  it('is one table: no blank line between its rows (one ends it, and the rest render as text)', () => {
    const lines = readme.split('\n');
    const rows = SETTINGS.map((s) => lines.findIndex((l) => l.startsWith(`| \`${s.env}\` `)));
    const [first, last] = [Math.min(...rows), Math.max(...rows)];
    const gaps = lines.slice(first, last + 1).filter((line) => !line.startsWith('|'));
    expect(gaps).toEqual([]);
    expect(lines[last + 1]).toBe('');
  });
});
