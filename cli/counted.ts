/**
 * "1 record", "2 records": a count and its noun, plural when the count is not one; `shown`
 * writes the number (the sandbox's banner groups thousands).
 */
export function counted(n: number, noun: string, shown: (n: number) => string = String): string {
  return `${shown(n)} ${n === 1 ? noun : `${noun}s`}`;
}
