import { UserError } from './errors.js';

/**
 * Network failures of the CLI's own listeners and requests in words: what could not be done,
 * the flag or setting it came from, and why, instead of `getaddrinfo ENOTFOUND …`.
 */

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Where a listener's address came from: the flag, or the setting when no flag was given. */
export interface ListenSource {
  host: string;
  port: number;
  hostFrom: string;
  portFrom: string;
}

/** A listener that could not start, as one line; undefined for a failure of another kind. */
export function listenRefusal(error: unknown, at: ListenSource): UserError | undefined {
  const where = `cannot listen on ${at.host} port ${at.port}`;
  switch (codeOf(error)) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return new UserError(
        `${where}: ${at.hostFrom} ${at.host} is neither an IP address nor a name this machine resolves`,
        2,
      );
    case 'EADDRNOTAVAIL':
      return new UserError(
        `${where}: ${at.host} is not an address of this machine; choose one with ${at.hostFrom} (127.0.0.1 or 0.0.0.0, say)`,
        2,
      );
    case 'EADDRINUSE':
      return new UserError(`${where}: the port is in use; choose another with ${at.portFrom}`);
    case 'EACCES':
      return new UserError(
        `${where}: not permitted (ports below 1024 need privileges); choose another with ${at.portFrom}`,
      );
    default:
      return undefined;
  }
}

/** Why a request got no answer, in words (the code stays, for a search). */
export function unreachableReason(error: unknown): string {
  const code = codeOf(error);
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused, nothing listens there (ECONNREFUSED)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `no such host (${code})`;
    case 'ETIMEDOUT':
      return 'no answer in time (ETIMEDOUT)';
    case 'ECONNRESET':
      return 'the connection was reset (ECONNRESET)';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `the host cannot be reached (${code})`;
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `its certificate is not trusted here (${code})`;
    default:
      return code ?? 'no answer';
  }
}
