/**
 * A request that got no answer, in words: the CLI's own requests and the worker's deliveries
 * to automation endpoints say why (`connection refused, nothing listens there (ECONNREFUSED)`)
 * instead of a bare code or Node's message, which names the address.
 */

import { MAX_REDIRECTS } from '../config/redirect-policy.js';

/** The system's code of a network failure (ECONNREFUSED, …), when it has one. */
export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
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
    case 'ERR_TOO_MANY_REDIRECTS':
      // Only redirects within the request's origin are followed (config/redirect-policy.ts).
      return `redirected more than ${MAX_REDIRECTS} times within its origin (${code})`;
    default:
      return code ?? 'no answer';
  }
}
