import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from 'selfsigned';

export interface SandboxCertificate {
  key: string;
  cert: string;
  /** The PEM a client trusts (EBS_CA_FILE, or the client's `ca` option). */
  caFile: string;
}

/**
 * A self-signed certificate for localhost, 127.0.0.1 and ::1, kept in `dir` so that a client
 * configured once keeps trusting the sandbox across restarts.
 */
export async function sandboxCertificate(dir: string): Promise<SandboxCertificate> {
  mkdirSync(dir, { recursive: true });
  const keyFile = join(dir, 'sandbox-key.pem');
  const caFile = join(dir, 'sandbox-ca.pem');
  if (existsSync(keyFile) && existsSync(caFile)) {
    return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(caFile, 'utf8'), caFile };
  }
  const pems = await generate([{ name: 'commonName', value: 'ebsync sandbox' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 5 * 365 * 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  writeFileSync(keyFile, pems.private, { mode: 0o600 });
  // The certificate is public (every client is given it); its folder is owner-only.
  writeFileSync(caFile, pems.cert, { mode: 0o644 });
  return { key: pems.private, cert: pems.cert, caFile };
}
