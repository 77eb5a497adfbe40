/**
 * The write side of a slice (read-slice.ts): batches started in the order they are handed
 * over, up to `writers` at once (a destination's concurrentBatches), and never two holding the
 * same record at once, so that a record read twice is written in the order it was read. The
 * first failure stops every batch not yet started; written() then throws it.
 */
export interface BatchWriter<T> {
  /** Hands a batch over; it starts when a writer is free and no batch holding its records runs. */
  add(batch: T[]): void;
  /** Resolves once every batch handed over is written; rejects with the first failure. */
  written(): Promise<void>;
}

export function batchWriter<T>(options: {
  writers: number;
  keyOf: (item: T) => string;
  write: (batch: T[]) => Promise<void>;
}): BatchWriter<T> {
  const writers = Math.max(1, options.writers);
  const running = new Set<{ keys: Set<string>; done: Promise<void> }>();
  let starting: Promise<void> = Promise.resolve();
  let failure: { error: unknown } | undefined;

  /** What a batch of `keys` waits for: the batches holding its records, else a free writer. */
  const waitsFor = (keys: Set<string>): Promise<void>[] => {
    const shared = [...running].filter((w) => [...w.keys].some((k) => keys.has(k)));
    if (shared.length > 0) return shared.map((w) => w.done);
    return running.size >= writers ? [...running].map((w) => w.done) : [];
  };

  return {
    add(batch) {
      if (batch.length === 0) return;
      starting = starting.then(async () => {
        let keys: Set<string>;
        try {
          keys = new Set(batch.map(options.keyOf));
        } catch (error) {
          failure ??= { error };
          return;
        }
        for (let wait = waitsFor(keys); wait.length > 0; wait = waitsFor(keys)) {
          await Promise.race(wait);
        }
        if (failure) return;
        const entry = {
          keys,
          // Through a promise, so that a write that throws at once fails like one that rejects.
          done: Promise.resolve()
            .then(() => options.write(batch))
            .catch((error: unknown) => {
              failure ??= { error };
            }),
        };
        running.add(entry);
        // Registered before anyone waits on it: gone from `running` by the time they look.
        void entry.done.then(() => running.delete(entry));
      });
    },
    async written() {
      await starting;
      await Promise.all([...running].map((w) => w.done));
      if (failure) throw failure.error;
    },
  };
}
