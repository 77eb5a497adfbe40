import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DataConverter } from '@temporalio/common';
import { ConfigError, configSchema, type Config } from '../config/index.js';
import { makeDataDir } from '../store/private-files.js';
import { EncryptionCodec, type EncryptionCodecOptions, type EncryptionKey } from './codec.js';

export function generateKeyLine(
  id = `k${new Date().toISOString().slice(0, 10).replace(/-/g, '')}`,
): string {
  return `${id}:${randomBytes(32).toString('base64')}`;
}

/** Key files this process made, for a line said after the read that made one. */
const madeHere = new Set<string>();

/**
 * Where this process's keys are, as encryptionKeyRing says it, and whether this process made
 * the key file (a later read of it here no longer knows).
 */
export function keysSource(config: Config): { keys: EncryptionKey[]; from: string } {
  const ring = encryptionKeyRing(config);
  const file = join(config.dataDir, 'encryption-keys');
  if (config.encryption.keys || !madeHere.has(file)) return ring;
  return { keys: ring.keys, from: `in ${file}, made by this command (EBSYNC_DATA_DIR)` };
}

/**
 * The keys of this process: from EBSYNC_ENCRYPTION_KEYS, or in development from a key file
 * under the data dir, made on first use. Production without keys is a startup error: a
 * generated key would be lost with the machine, and with it every history. `from` says where
 * they came from, for the error of a payload they do not open.
 */
export function encryptionKeyRing(config: Config): { keys: EncryptionKey[]; from: string } {
  if (config.encryption.keys) {
    return { keys: config.encryption.keys, from: 'from EBSYNC_ENCRYPTION_KEYS' };
  }
  if (config.mode === 'production') {
    throw new ConfigError([
      'EBSYNC_ENCRYPTION_KEYS is not set: production mode needs at least one key (id:base64 of 32 bytes); make one with `ebsync keygen`',
    ]);
  }
  const file = join(config.dataDir, 'encryption-keys');
  // A key made now opens nothing made before: most often the command was given another
  // EBSYNC_DATA_DIR than the worker's, and the error of a payload says so.
  const made = !existsSync(file);
  let text: string;
  try {
    if (made) {
      makeDataDir(config.dataDir);
      writeFileSync(file, `${generateKeyLine('dev1')}\n`, { mode: 0o600 });
      madeHere.add(file);
    } else if (!statSync(file).isFile()) {
      throw new ConfigError([
        `EBSYNC_DATA_DIR: ${file} is not a file; expected the development key file (remove it to make a new one) or keys in EBSYNC_ENCRYPTION_KEYS`,
      ]);
    }
    chmodSync(file, 0o600);
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    // A data dir this user cannot write (read-only, another user's): one line, not Node's.
    const code = (error as NodeJS.ErrnoException).code ?? 'an error';
    throw new ConfigError([
      `EBSYNC_DATA_DIR '${config.dataDir}': the development key file ${made ? 'cannot be made' : 'cannot be read'} there (${code}); choose a data directory this user can write, or set EBSYNC_ENCRYPTION_KEYS`,
    ]);
  }
  const parsed = configSchema.shape.encryption.safeParse({ keys: text.trim() });
  if (!parsed.success || !parsed.data.keys) {
    throw new ConfigError([`${file} does not hold valid keys; delete it to make a new one`]);
  }
  return {
    keys: parsed.data.keys,
    from: made
      ? `in ${file}, made by this command (EBSYNC_DATA_DIR)`
      : `in ${file} (EBSYNC_DATA_DIR)`,
  };
}

/** The keys of this process (encryptionKeyRing). */
export const encryptionKeys = (config: Config): EncryptionKey[] => encryptionKeyRing(config).keys;

/**
 * The data converter every client and worker of ebsync uses. Development lets payloads that
 * were never encrypted through (a workflow started from the Temporal CLI or UI); production
 * refuses them.
 */
export function dataConverter(
  config: Config,
  holder: EncryptionCodecOptions['holder'] = 'command',
): DataConverter {
  const ring = encryptionKeyRing(config);
  const codec = new EncryptionCodec(ring.keys, {
    acceptPlaintext: config.mode === 'development',
    keysFrom: ring.from,
    holder,
  });
  return { payloadCodecs: [codec], failureConverterPath: failureConverterPath() };
}

/**
 * The module whose failure converter seals failure messages (worker/failure-converter.cjs),
 * from the sources or from the compiled tree in dist/ (which has no copy: the sources are
 * then two folders up).
 */
export function failureConverterPath(): string {
  for (const rel of ['./failure-converter.cjs', '../../worker/failure-converter.cjs']) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error('worker/failure-converter.cjs is missing next to the worker');
}
