import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';
import type { Config } from '../config/index.js';

/** TLS and API-key settings shared by the client and the worker connection to Temporal. */
export function temporalConnectionOptions(config: Config): {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
} {
  const t = config.temporal;
  const useTls =
    t.tls ||
    t.tlsCertFile !== undefined ||
    t.tlsCaFile !== undefined ||
    t.tlsServerName !== undefined ||
    t.apiKey !== undefined;
  const options: { address: string; tls?: TLSConfig | boolean; apiKey?: string } = {
    address: t.address,
  };
  if (useTls) {
    const tls: TLSConfig = {};
    if (t.tlsServerName !== undefined) tls.serverNameOverride = t.tlsServerName;
    if (t.tlsCaFile !== undefined) tls.serverRootCACertificate = readFileSync(t.tlsCaFile);
    if (t.tlsCertFile !== undefined && t.tlsKeyFile !== undefined) {
      tls.clientCertPair = { crt: readFileSync(t.tlsCertFile), key: readFileSync(t.tlsKeyFile) };
    }
    options.tls = Object.keys(tls).length > 0 ? tls : true;
  }
  if (t.apiKey !== undefined) options.apiKey = t.apiKey;
  return options;
}
