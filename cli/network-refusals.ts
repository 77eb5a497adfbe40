import { codeOf } from '../api/network-failures.js';
import { UserError } from './errors.js';

/**
 * Listeners of the CLI that could not start, in words: what could not be done,
 * the flag or setting it came from, and why, instead of `getaddrinfo ENOTFOUND …`.
 */

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

/** The system calls a listener's start makes: resolving its host, binding, listening. */
const LISTEN_SYSCALLS = new Set(['listen', 'bind', 'getaddrinfo']);

/** A listener that could not start, as one line; undefined for a failure of another kind. */
export function listenRefusal(error: unknown, at: ListenSource): ListenRefusal | undefined {
  const where = `cannot listen on ${at.host} port ${at.port}`;
  // What a listener's start also opens (its store's files) fails with the same codes: an
  // EACCES from opening a file was told as a port that needs privileges.
  const syscall = (error as { syscall?: unknown } | null)?.syscall;
  if (typeof syscall === 'string' && !LISTEN_SYSCALLS.has(syscall)) return undefined;
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
