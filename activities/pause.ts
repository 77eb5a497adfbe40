/**
 * A wait of `ms` that ends early once `signal` aborts or any of `until` settles, and leaves
 * nothing behind either way: no pending timer (which would hold the process open after its
 * work is done, up to `ms` after its last line) and no listener on the signal (a loop that
 * pauses on one signal would otherwise gather one per pause).
 */
export async function pause(
  ms: number,
  wake: { signal?: AbortSignal; until?: readonly Promise<unknown>[] } = {},
): Promise<void> {
  const { signal, until = [] } = wake;
  if (signal?.aborted) return;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms);
        onAbort = resolve;
        signal?.addEventListener('abort', onAbort, { once: true });
      }),
      // Settling is the wake-up, whichever way: the caller reads the outcome where it awaits it.
      ...until.map((p) => p.then(noop, noop)),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}

function noop(): void {}
