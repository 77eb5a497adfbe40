import { InvalidArgumentError } from 'commander';

/**
 * Flag parsers: commander prints "option '--x <n>' argument 'v' is invalid. <why>" on one
 * line and the program exits 2.
 */
export function intFlag(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(
        max === Number.MAX_SAFE_INTEGER
          ? `Expected a whole number of at least ${min}.`
          : `Expected a whole number from ${min} to ${max}.`,
      );
    }
    return n;
  };
}

export const portFlag = () => intFlag(0, 65535);
