import type { RefusalReason, UpsertResult } from './destination.js';
import { DestinationPausedError } from './errors.js';
import type { MirrorRecord } from './record.js';

/**
 * One CRM upsert meeting the day's allowance (or the org's allocation) spent: the first pause
 * is kept and no call is made after it (each would spend a call against the spent allowance
 * and be refused), and the upsert ends with the pause saying what it wrote before
 * (DestinationPausedError.partial). Without that part the ledger lacked those records: the
 * pass counted fewer written than the CRM held, and the next one wrote them again.
 */
export class UpsertPause {
  private first: DestinationPausedError | undefined;

  get paused(): boolean {
    return this.first !== undefined;
  }

  /**
   * What `call` answers; undefined when it paused, or without calling it once a call before
   * it paused. Any other failure is thrown.
   */
  async unlessPaused<T>(call: () => Promise<T>): Promise<T | undefined> {
    if (this.first) return undefined;
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof DestinationPausedError)) throw error;
      this.first ??= error;
      return undefined;
    }
  }

  /**
   * Why a record was written without a part the pause left unmade (`what`: its contacts'
   * links): a record written in part, which the next pass writes again to make that part.
   */
  leftOut(what: string): RefusalReason {
    return { code: 'PAUSED', message: `${what} left for after the pause: ${this.first?.message}` };
  }

  /**
   * After a pause, throws it with the records of `records` that `taken` says the CRM answered
   * for (written, or refused one by one), as `answer` says of them; else does nothing.
   */
  throwIfPaused(
    records: readonly MirrorRecord[],
    taken: (record: MirrorRecord) => boolean,
    answer: (part: readonly MirrorRecord[]) => UpsertResult,
  ): void {
    const paused = this.first;
    if (!paused) return;
    const indexes = records.flatMap((r, i) => (taken(r) ? [i] : []));
    if (indexes.length === 0) throw paused;
    throw new DestinationPausedError(paused.message, paused.resumeAt, {
      indexes,
      result: answer(indexes.map((i) => records[i] as MirrorRecord)),
    });
  }
}
