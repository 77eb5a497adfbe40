import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { destinationKey, mirrorFlags, normalizeDestination } from '../../cli/sync.js';

/** What a POSIX shell makes of the flags: the words a command would get. */
const words = (flags: string): string[] =>
  JSON.parse(
    execFileSync(
      'sh',
      ['-c', `node -e 'console.log(JSON.stringify(process.argv.slice(1)))' --${flags}`],
      {
        encoding: 'utf8',
      },
    ),
  ) as string[];

describe('mirrorFlags: the follow-up commands a detached sync prints name the same mirror', () => {
  it('says nothing when the defaults were meant', () => {
    expect(mirrorFlags({}, 'default', normalizeDestination('sqlite:/tmp/x.db'))).toBe('');
  });

  it('names the connection and the SQLite file given, quoted for the shell where needed', () => {
    const file = join('/tmp', "it's a mirror.db");
    const destination = normalizeDestination(`sqlite:${file}`);
    const flags = mirrorFlags({ connection: 'shop', to: `sqlite:${file}` }, 'shop', destination);
    expect(words(flags)).toEqual(['--connection', 'shop', '--to', `sqlite:${file}`]);
  });

  it('names a Postgres destination without its password, as the same mirror', () => {
    const url = 'postgres://me:s3cret@db.example:5433/crm?sslmode=require&schema=biz';
    const destination = normalizeDestination(url);
    const flags = mirrorFlags({ to: url }, 'default', destination);
    expect(flags).not.toContain('s3cret');
    const [, shown] = words(flags);
    expect(shown).toBe('postgres://db.example:5433/crm?schema=biz');
    expect(destinationKey(normalizeDestination(shown!))).toBe(destinationKey(destination));
  });

  it('names a CRM by its kind', () => {
    expect(mirrorFlags({ to: 'hubspot' }, 'default', normalizeDestination('hubspot'))).toBe(
      ' --to hubspot',
    );
  });
});
