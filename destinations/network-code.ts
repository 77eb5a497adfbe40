/**
 * What a failed request's error may say about it: the network code (ECONNREFUSED, …) found
 * along its causes. Never its message or the request it carries, which may hold a token.
 */
export function networkCode(error: unknown): string {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return error instanceof TypeError ? 'network error' : 'unreadable answer';
}
