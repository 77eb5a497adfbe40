import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * docs/security.md names the code that keeps each promise and the test that checks it: those
 * files exist, and the README links the page.
 */
const read = (path: string): string => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

describe('docs/security.md', () => {
  it('is linked from the README', () => {
    expect(read('README.md')).toContain('(docs/security.md)');
  });

  it('names only files that exist', () => {
    const named = [...read('docs/security.md').matchAll(/`((?:[a-z-]+\/)+[a-z0-9.-]+\.ts)`/g)].map(
      (m) => m[1] ?? '',
    );
    expect(named.length).toBeGreaterThan(8);
    expect(named.filter((path) => !existsSync(new URL(`../${path}`, import.meta.url)))).toEqual([]);
  });
});
