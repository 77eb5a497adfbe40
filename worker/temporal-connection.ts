import type { TLSConfig } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { readPemFile } from './pem-files.js';

/** Whether the connection to Temporal uses TLS: asked for, or implied by a TLS file or an API key. */
export function temporalUsesTls(config: Config): boolean {
  const t = config.temporal;
  return (
    t.tls ||
    t.tlsCertFile !== undefined ||
    t.tlsCaFile !== undefined ||
    t.tlsServerName !== undefined ||
    t.apiKey !== undefined
  );
}

/** TLS and API-key settings shared by the client and the worker connection to Temporal. */
export function temporalConnectionOptions(config: Config): {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
} {
  const t = config.temporal;
  const useTls = temporalUsesTls(config);
  const options: { address: string; tls?: TLSConfig | boolean; apiKey?: string } = {
    address: t.address,
  };
  if (useTls) {
    const tls: TLSConfig = {};
    if (t.tlsServerName !== undefined) tls.serverNameOverride = t.tlsServerName;
    if (t.tlsCaFile !== undefined)
      tls.serverRootCACertificate = readPemFile('TEMPORAL_TLS_CA', t.tlsCaFile, 'CERTIFICATE');
    if (t.tlsCertFile !== undefined && t.tlsKeyFile !== undefined) {
      tls.clientCertPair = {
        crt: readPemFile('TEMPORAL_TLS_CERT', t.tlsCertFile, 'CERTIFICATE'),
        key: readPemFile('TEMPORAL_TLS_KEY', t.tlsKeyFile, 'PRIVATE KEY'),
      };
    }
    options.tls = Object.keys(tls).length > 0 ? tls : true;
  }
  if (t.apiKey !== undefined) options.apiKey = t.apiKey;
  return options;
}
