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

/**
 * A listener that could not start, in words; `code` keeps the system's (EADDRINUSE, …) for a
 * caller that has a way around one of them (the dev stack's status page takes a free port).
 */
export class ListenRefusal extends UserError {
  constructor(
    message: string,
    readonly code: string,
    exitCode?: number,
  ) {
    super(message, exitCode);
  }
}

/** A listener that could not start, as one line; undefined for a failure of another kind. */
export function listenRefusal(error: unknown, at: ListenSource): ListenRefusal | undefined {
  const where = `cannot listen on ${at.host} port ${at.port}`;
  const code = codeOf(error);
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return new ListenRefusal(
        `${where}: ${at.hostFrom} ${at.host} is neither an IP address nor a name this machine resolves`,
        code,
        2,
      );
    case 'EADDRNOTAVAIL':
      return new ListenRefusal(
        `${where}: ${at.host} is not an address of this machine; choose one with ${at.hostFrom} (127.0.0.1 or 0.0.0.0, say)`,
        code,
        2,
      );
    case 'EADDRINUSE':
      return new ListenRefusal(
        `${where}: the port is in use; choose another with ${at.portFrom}`,
        code,
      );
    case 'EACCES':
      return new ListenRefusal(
        `${where}: not permitted (ports below 1024 need privileges); choose another with ${at.portFrom}`,
        code,
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
