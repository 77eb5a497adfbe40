import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/index.js';

/** What a PEM file given in a setting must hold, by the label of its blocks. */
export type PemKind = 'CERTIFICATE' | 'PRIVATE KEY';

/**
 * Reads a PEM file named by a setting (a CA bundle, a client certificate or key). A file that
 * is missing, unreadable or holds no PEM block of the kind is bad input, said in one line that
 * names the setting: without this the user saw `ENOENT ... open`, or a non-PEM file was taken
 * silently and the TLS handshake failed later with a message about self-signed certificates.
 */
export function readPemFile(setting: string, path: string, kind: PemKind): Buffer {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'it is a folder'
            : (code ?? 'unreadable');
    throw new ConfigError([`${setting}: cannot read '${path}' (${why}); expected a PEM file`]);
  }
  // A private key's label may say its type (RSA PRIVATE KEY, EC PRIVATE KEY, ENCRYPTED ...).
  const label = kind === 'CERTIFICATE' ? 'CERTIFICATE' : '[A-Z ]*PRIVATE KEY';
  if (!new RegExp(`-----BEGIN ${label}-----`).test(bytes.toString('latin1'))) {
    throw new ConfigError([
      `${setting}: '${path}' holds no PEM ${kind.toLowerCase()} (a -----BEGIN ${kind}----- block)`,
    ]);
  }
  return bytes;
}
