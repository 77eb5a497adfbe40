/** Wake-ups of one connection's drain go out at most this often from one receiver. */
export const WAKE_EVERY_MS = 100;
/**
 * While notices keep coming (each wake-up owed by notices that waited for the one before),
 * wake-ups are this far apart instead. Every wake-up is one drain batch, and a batch costs
 * Temporal and the worker about the same whether it holds 5 notices or 50: at 50 deliveries a
 * second, 100 ms apart made batches of 5 and about 11 ms of CPU per delivery over all
 * processes. 400 ms keeps a notice's wait well inside the second a change may take.
 */
export const WAKE_STREAMING_MS = 400;
/** After a failed wake-up (Temporal away), the next try waits this, doubling up to the cap. */
const RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;

interface Owed {
  destination: string;
  /** A notice came that no wake-up sent since covers. */
  owed: boolean;
  sending: boolean;
  /** Epoch ms before which no wake-up goes (the interval, or a retry's wait). */
  notBefore: number;
  /** A notice came before notBefore: the next wake-up goes when the interval ends. */
  waited: boolean;
  retryMs: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Wakes connections' drains after notices are stored, without one Temporal call per delivery:
 * the first notice after a quiet spell wakes the drain at once, the notices within the next
 * WAKE_EVERY_MS share one more wake-up at its end, and while they keep coming (a wake-up that
 * waited for its interval) the next waits WAKE_STREAMING_MS; one at a time is on its way per
 * connection. A wake-up that fails is tried again (1 s doubling to 30 s) until one gets
 * through; the notices are safe in the store meanwhile, and the drain also checks on its own.
 */
export class WakeUps {
  private readonly connections = new Map<string, Owed>();
  private closed = false;

  constructor(
    private readonly send: (connectionId: string, destination: string) => Promise<void>,
    private readonly onError: (connectionId: string, error: unknown) => void = () => undefined,
    private readonly everyMs = WAKE_EVERY_MS,
    private readonly streamingMs = WAKE_STREAMING_MS,
  ) {}

  /** A notice of this connection was stored: its drain is owed a wake-up. */
  wake(connectionId: string, destination: string): void {
    if (this.closed) return;
    let state = this.connections.get(connectionId);
    if (!state) {
      state = {
        destination,
        owed: false,
        sending: false,
        notBefore: 0,
        waited: false,
        retryMs: RETRY_MS,
        timer: undefined,
      };
      this.connections.set(connectionId, state);
    }
    state.destination = destination;
    state.owed = true;
    this.schedule(connectionId, state);
  }

  /** Wake-ups not sent yet are dropped: the drains check the inbox on their own. */
  close(): void {
    this.closed = true;
    for (const state of this.connections.values()) clearTimeout(state.timer);
    this.connections.clear();
  }

  private schedule(connectionId: string, state: Owed): void {
    if (!state.owed || state.sending || state.timer || this.closed) return;
    const wait = state.notBefore - Date.now();
    if (wait > 0) {
      state.waited = true;
      state.timer = setTimeout(() => {
        state.timer = undefined;
        this.schedule(connectionId, state);
      }, wait);
      state.timer.unref();
      return;
    }
    state.owed = false;
    state.sending = true;
    state.notBefore = Date.now() + (state.waited ? this.streamingMs : this.everyMs);
    state.waited = false;
    this.send(connectionId, state.destination).then(
      () => {
        state.sending = false;
        state.retryMs = RETRY_MS;
        this.schedule(connectionId, state);
      },
      (error: unknown) => {
        state.sending = false;
        state.owed = true;
        state.notBefore = Date.now() + state.retryMs;
        state.retryMs = Math.min(MAX_RETRY_MS, state.retryMs * 2);
        this.onError(connectionId, error);
        this.schedule(connectionId, state);
      },
    );
  }
}
