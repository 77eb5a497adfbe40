import { describe, expect, it } from 'vitest';
import { jsonText, printable, report, shownSafely } from '../../cli/shown-text.js';

describe('text for the terminal', () => {
  it('writes out the control characters of a report, keeping its lines and tabs', () => {
    expect(printable('a\tb\nnote: x\x1b[2J\x07\r\x7f\x9b\n')).toBe(
      'a\tb\nnote: x\\x1b[2J\\x07\\x0d\\x7f\\x9b\n',
    );
    // Printable text, other scripts included, stays as it is.
    expect(printable('zoë — 東京 ✓')).toBe('zoë — 東京 ✓');
  });

  it('writes out a newline too in an error line, and cuts one past 2,000 characters', () => {
    expect(shownSafely('bad\nvalue\x1b')).toBe('bad\\x0avalue\\x1b');
    expect(shownSafely('x'.repeat(2_005))).toBe(`${'x'.repeat(2_000)}… (5 more characters)`);
  });
});

describe('a report of values someone else wrote', () => {
  it('keeps its own lines and writes out every control character of the values, newlines too', () => {
    const render = (v: { name: string; notes: string[] }, n: number): string =>
      `name ${v.name}\nnotes ${v.notes.join(', ')} (${n})\n`;
    expect(report(render, { name: 'A\nebsync: forged', notes: ['x\x1b[2J', 'ok'] }, 2)).toBe(
      'name A\\x0aebsync: forged\nnotes x\\x1b[2J, ok (2)\n',
    );
  });

  it('writes out the control characters of keys too, which a report may print', () => {
    const render = (counts: Record<string, number>): string =>
      Object.entries(counts)
        .map(([name, n]) => `${name}: ${n}\n`)
        .join('');
    expect(report(render, { 'a\nebsync: forged': 1, b: 2 })).toBe(
      'a\\x0aebsync: forged: 1\nb: 2\n',
    );
  });
});

describe('JSON for a terminal', () => {
  it('writes DEL and the C1 characters as \\u00XX too, the same JSON value', () => {
    const value = { name: 'a\x1b\x7f\x9b\u00a0é' };
    const text = jsonText(value);
    expect(text).toBe('{"name":"a\\u001b\\u007f\\u009b\u00a0é"}');
    expect(JSON.parse(text)).toEqual(value);
    expect(jsonText([1], 2)).toBe('[\n  1\n]');
  });
});
