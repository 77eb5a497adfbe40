import { describe, expect, it } from 'vitest';
import { batchWriter } from '../../activities/mirror/batch-writer.js';

/** Batches of ids written by a writer that takes `ms` each and notes when. */
function recorded(writers: number, ms: (batch: string[]) => number = () => 20) {
  const log: { batch: string[]; start: number; end: number }[] = [];
  let running = 0;
  let most = 0;
  const writer = batchWriter<string>({
    writers,
    keyOf: (id) => id,
    async write(batch) {
      const entry = { batch, start: performance.now(), end: Infinity };
      log.push(entry);
      most = Math.max(most, ++running);
      await new Promise((r) => setTimeout(r, ms(batch)));
      running -= 1;
      entry.end = performance.now();
    },
  });
  return { writer, log, most: () => most };
}

describe('the write side of a slice', () => {
  it('writes as many batches at once as it has writers, started in the order given', async () => {
    const { writer, log, most } = recorded(2);
    for (const batch of [['a'], ['b'], ['c'], ['d']]) writer.add(batch);
    await writer.written();
    expect(most()).toBe(2);
    expect(log.map((e) => e.batch[0])).toEqual(['a', 'b', 'c', 'd']);
  });

  it('one at a time with one writer', async () => {
    const { writer, log, most } = recorded(1);
    for (const batch of [['a'], ['b'], ['c']]) writer.add(batch);
    await writer.written();
    expect(most()).toBe(1);
    expect(log).toHaveLength(3);
  });

  it('starts a batch holding a record being written only once that write is done', async () => {
    // 'x' read twice: its second batch must not overtake the first, though a writer is free.
    const { writer, log } = recorded(3, (batch) => (batch.includes('slow') ? 60 : 5));
    writer.add(['slow', 'x']);
    writer.add(['x', 'y']);
    writer.add(['z']);
    await writer.written();
    const first = log.find((e) => e.batch.includes('slow'))!;
    const second = log.find((e) => e.batch.includes('y'))!;
    expect(second.start).toBeGreaterThanOrEqual(first.end);
    // Batches after it start in order, so 'z' waited too: the order given is kept.
    expect(log.map((e) => e.batch.join())).toEqual(['slow,x', 'x,y', 'z']);
  });

  it('throws the first failure, and starts no batch after it', async () => {
    const started: string[] = [];
    const writer = batchWriter<string>({
      writers: 1,
      keyOf: (id) => id,
      async write(batch) {
        started.push(batch[0]!);
        await new Promise((r) => setTimeout(r, 5));
        if (batch[0] === 'b') throw new Error('refused b');
      },
    });
    for (const batch of [['a'], ['b'], ['c']]) writer.add(batch);
    await expect(writer.written()).rejects.toThrow('refused b');
    expect(started).toEqual(['a', 'b']);
  });

  it('with two writers, throws a failure only once the batch beside it is written', async () => {
    let besideEnded = 0;
    let rejectedAt = 0;
    const writer = batchWriter<string>({
      writers: 2,
      keyOf: (id) => id,
      async write(batch) {
        if (batch[0] === 'fails') {
          await new Promise((r) => setTimeout(r, 5));
          throw new Error('refused');
        }
        await new Promise((r) => setTimeout(r, 40));
        besideEnded = performance.now();
      },
    });
    writer.add(['beside']);
    writer.add(['fails']);
    await expect(
      writer.written().catch((error: unknown) => {
        rejectedAt = performance.now();
        throw error;
      }),
    ).rejects.toThrow('refused');
    expect(besideEnded).toBeGreaterThan(0);
    expect(rejectedAt).toBeGreaterThanOrEqual(besideEnded);
  });

  it('takes a write that throws at once as a failure, and still waits for the others', async () => {
    const started: string[] = [];
    let slowEnded = 0;
    const writer = batchWriter<string>({
      writers: 2,
      keyOf: (id) => id,
      write(batch) {
        started.push(batch[0]!);
        if (batch[0] === 'at-once') throw new Error('at once');
        return new Promise<void>((r) => setTimeout(r, 40)).then(() => {
          slowEnded = performance.now();
        });
      },
    });
    writer.add(['slow']);
    writer.add(['at-once']);
    await expect(writer.written()).rejects.toThrow('at once');
    expect(slowEnded).toBeGreaterThan(0);
    writer.add(['after']);
    await expect(writer.written()).rejects.toThrow('at once');
    expect(started).toEqual(['slow', 'at-once']);
  });

  it('takes no empty batch', async () => {
    const { writer, log } = recorded(2);
    writer.add([]);
    await writer.written();
    expect(log).toEqual([]);
  });
});
