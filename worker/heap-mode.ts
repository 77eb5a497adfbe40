import { setFlagsFromString } from 'node:v8';

/**
 * Has V8 keep its heaps near what is live. A worker reading a large mirror pass allocates
 * fast (page bodies, canonical records), and V8's default heap growth then held about
 * 3.5 times the live heap: the bench worker's RSS reached 565 MiB at 30,000 leads with about
 * 55 MiB live, and 272 MiB with this mode. It costs CPU: at 100,000 leads the worker used
 * about twice the CPU time of a run without it (bench/RESULTS.md and its history). The flag is
 * read at each garbage collection, so setting it once at start serves every isolate of the
 * process (the workflow thread's too).
 */
export function keepHeapsSmall(): void {
  setFlagsFromString('--optimize-for-size');
}
