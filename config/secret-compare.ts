import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whether a secret given (an admin token, an OAuth state) equals the expected one, in time
 * that does not depend on where they differ: both are hashed first, so the lengths match.
 */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
