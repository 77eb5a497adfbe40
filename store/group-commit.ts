/**
 * Group commit: callers that arrive while the previous commit is on its way, or in the same
 * turn of the event loop, are written by one commit together. Durability costs one fsync per
 * group instead of one per caller, and a caller waits at most for the commit before its own
 * and then its own.
 *
 * `commit` gets the items in arrival order and answers one result per item, in that order;
 * when it throws, every item of the group is rejected with that error (nothing of the group
 * is committed: it is one transaction).
 */
export class GroupCommit<T, R> {
  private queue: { item: T; resolve(result: R): void; reject(error: unknown): void }[] = [];
  private scheduled = false;
  private inFlight = false;
  /** Groups committed so far, and the items in them. */
  commits = 0;
  items = 0;

  constructor(
    private readonly commit: (items: readonly T[]) => R[] | Promise<R[]>,
    /** At most this many items per commit; the rest go in the next one. */
    private readonly maxGroup = 1_000,
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight || this.queue.length === 0) return;
    this.scheduled = true;
    // After the I/O callbacks of this turn: every request parsed meanwhile joins the group.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    const group = this.queue.splice(0, this.maxGroup);
    if (group.length === 0) return;
    this.inFlight = true;
    try {
      const results = await this.commit(group.map((g) => g.item));
      this.commits += 1;
      this.items += group.length;
      group.forEach((g, i) => {
        const result = results[i];
        if (result === undefined) g.reject(new Error('the commit gave no answer for an item'));
        else g.resolve(result);
      });
    } catch (error) {
      for (const g of group) g.reject(error);
    } finally {
      this.inFlight = false;
      this.schedule();
    }
  }
}
