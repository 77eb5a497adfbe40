import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { defaultMirrorFile, openDestination } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import { ALL_TABLES } from '../../destinations/tables.js';
import { sqliteAutomationStore } from '../../store/automation-endpoints.js';
import { defaultLedgerFile, openLedger } from '../../store/open-ledger.js';
import { dataConverter } from '../../worker/data-converter.js';
import { webhookRegistrations } from '../../worker/webhook-receiver.js';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';

/**
 * What ebsync keeps on disk is its owner's only (issue 30, item 7): mirror.db holds names and
 * e-mails in plaintext, webhooks.db and store.db sealed secrets and ids. The data dir is made
 * 0700 and each SQLite file, with its -wal and -shm, 0600, whatever the umask (0022 here).
 */
const root = mkdtempSync(join(tmpdir(), 'ebsync-modes-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const modeOf = (path: string): string => (statSync(path).mode & 0o777).toString(8).padStart(4, '0');

/** Every SQLite file and side file under dir, with its mode. */
function sqliteModes(dir: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(dir)
      .filter((name) => /\.db(-wal|-shm)?$/.test(name))
      .map((name) => [name, modeOf(join(dir, name))]),
  );
}

describe('file modes of the data dir', () => {
  it('makes the data dir 0700 and every store and destination file 0600, -wal and -shm too', async () => {
    const dataDir = join(root, 'fresh', '.ebsync');
    const config = loadConfig({ EBSYNC_DATA_DIR: dataDir });
    const codec = dataConverter(config).payloadCodecs?.[0];
    if (!codec) throw new Error('no codec');
    const registrations = webhookRegistrations(config);
    const automations = sqliteAutomationStore(join(dataDir, 'webhooks.db'), codec);
    const ledger = await openLedger(defaultLedgerFile(dataDir));
    const destination = openDestination(databaseOpeners, `sqlite:${defaultMirrorFile(dataDir)}`);
    try {
      await registrations.put('shop', {
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        destination: `sqlite:${defaultMirrorFile(dataDir)}`,
        url: 'http://127.0.0.1:8790/webhooks/shop',
        endpointId: null,
        registeredAt: new Date().toISOString(),
      });
      await destination.ensureSchema(ALL_TABLES);
      expect(modeOf(dataDir)).toBe('0700');
      const modes = sqliteModes(dataDir);
      for (const name of ['mirror.db', 'webhooks.db', 'store.db']) {
        for (const suffix of ['', '-wal', '-shm']) {
          expect(modes[`${name}${suffix}`], `${name}${suffix}`).toBe('0600');
        }
      }
      expect(Object.values(modes).every((mode) => mode === '0600')).toBe(true);
    } finally {
      registrations.close();
      automations.close();
      await ledger.close();
      await destination.close();
    }
  });

  it('tightens a mirror file left 0644 by an earlier version, with its side files', async () => {
    const dir = mkdtempSync(join(root, 'old-'));
    const file = join(dir, 'mirror.db');
    const old = new Database(file);
    old.pragma('journal_mode = WAL');
    old.exec('CREATE TABLE t (x)');
    for (const path of [file, `${file}-wal`, `${file}-shm`]) chmodSync(path, 0o644);
    const destination = openDestination(databaseOpeners, `sqlite:${file}`);
    try {
      for (const path of [file, `${file}-wal`, `${file}-shm`]) {
        expect(existsSync(path)).toBe(true);
        expect(modeOf(path), path).toBe('0600');
      }
    } finally {
      await destination.close();
      old.close();
    }
  });

  it('refuses a folder or a device named as an SQLite file, and leaves its mode alone', async () => {
    // Named as a file, /tmp was made 0600 (every other user of the machine lost it).
    const folder = mkdtempSync(join(root, 'folder-'));
    chmodSync(folder, 0o755);
    await expect(openLedger(`sqlite:${folder}`)).rejects.toThrow(
      `'${folder}' is a folder; expected an SQLite database file`,
    );
    expect(() => openDestination(databaseOpeners, `sqlite:${folder}`)).toThrow(/is a folder/);
    expect(modeOf(folder)).toBe('0755');
    // A device: refused before anything would change it (as root, chmod would succeed).
    const devNull = statSync('/dev/null').mode & 0o777;
    await expect(openLedger('sqlite:/dev/null')).rejects.toThrow(
      `'/dev/null' is not a regular file; expected an SQLite database file`,
    );
    expect(statSync('/dev/null').mode & 0o777).toBe(devNull);
  });

  it('leaves the mode of a file that is not an SQLite database alone, and SQLite refuses it', async () => {
    // `--to sqlite:/etc/passwd` made that file 0600 before SQLite refused it, and with it every
    // other user's name lookups (Postgres's initdb among them) failed.
    const dir = mkdtempSync(join(root, 'text-'));
    const text = join(dir, 'accounts.txt');
    writeFileSync(text, 'root:x:0:0:root:/root:/bin/bash\n');
    chmodSync(text, 0o644);
    expect(() => openDestination(databaseOpeners, `sqlite:${text}`)).toThrow(/not a database/);
    await expect(openLedger(`sqlite:${text}`)).rejects.toThrow(/not a database/);
    expect(modeOf(text)).toBe('0644');
    expect(readFileSync(text, 'utf8')).toBe('root:x:0:0:root:/root:/bin/bash\n');
    // An empty file is where SQLite makes a database: it is tightened, as a new one would be.
    const empty = join(dir, 'empty.db');
    writeFileSync(empty, '');
    chmodSync(empty, 0o644);
    const destination = openDestination(databaseOpeners, `sqlite:${empty}`);
    try {
      expect(modeOf(empty)).toBe('0600');
    } finally {
      await destination.close();
    }
  });
});

describe('commands given a folder as a database file', () => {
  it('say so in one line, start nothing and leave the folder as it was', async () => {
    const folder = mkdtempSync(join(root, 'cmd-'));
    chmodSync(folder, 0o755);
    const env = { EBSYNC_DATA_DIR: join(root, 'cmd-data'), EBSYNC_STORE_URL: `sqlite:${folder}` };
    const serve = await runCli(['webhooks', 'serve', '--port', '0'], env);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toBe(
      `ebsync: EBSYNC_STORE_URL sqlite:${folder} cannot be opened: '${folder}' is a folder; expected an SQLite database file\n`,
    );
    const temporal = await runCli(
      ['temporal', '--port', String(await freePort()), '--db-filename', folder],
      { EBSYNC_DATA_DIR: join(root, 'cmd-data') },
    );
    expect(temporal.code).toBe(1);
    expect(temporal.stderr).toBe(
      `ebsync: --db-filename '${folder}' is a folder; expected the dev server's SQLite database file (made if missing)\n`,
    );
    expect(modeOf(folder)).toBe('0755');
    // A file that is no database: said before the server starts, not as its own log line.
    const text = join(root, 'accounts.txt');
    writeFileSync(text, 'root:x:0:0:root:/root:/bin/bash\n');
    chmodSync(text, 0o644);
    const notDb = await runCli(
      ['temporal', '--port', String(await freePort()), '--db-filename', text],
      { EBSYNC_DATA_DIR: join(root, 'cmd-data') },
    );
    expect(notDb.code).toBe(1);
    expect(notDb.stderr).toBe(
      `ebsync: --db-filename '${text}' is not an SQLite database (it does not begin with SQLite's header); expected the dev server's SQLite database file (made if missing)\n`,
    );
    expect(modeOf(text)).toBe('0644');
  });
});

describe('commands that make the data dir', () => {
  it('ebsync sandbox makes it and its certificate folder 0700, the key 0600', async () => {
    // The README's quick start may run the sandbox first: it made both 0755.
    const dataDir = join(root, 'sandbox-first', '.ebsync');
    const sandbox = new CliProcess(['sandbox', '--port', '0'], { EBSYNC_DATA_DIR: dataDir });
    try {
      await sandbox.waitForLine(/sandbox ready/, 60_000);
      const certDir = join(dataDir, 'sandbox');
      expect(modeOf(dataDir)).toBe('0700');
      expect(modeOf(certDir)).toBe('0700');
      expect(modeOf(join(certDir, 'sandbox-key.pem'))).toBe('0600');
      // A CA certificate is public: readable, in a folder only its owner enters.
      expect(modeOf(join(certDir, 'sandbox-ca.pem'))).toBe('0644');
    } finally {
      sandbox.killAll();
    }
  });
});
