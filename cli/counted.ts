/** "1 record", "2 records": a count and its noun, plural when the count is not one. */
export function counted(n: number, noun: string): string {
  return `${n} ${n === 1 ? noun : `${noun}s`}`;
}
