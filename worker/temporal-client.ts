import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  isGrpcServiceError,
  makeGrpcRetryInterceptor,
  type ConnectionOptions,
} from '@temporalio/client';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Config } from '../config/index.js';
import { dataConverter } from './data-converter.js';
import { TemporalNamespaceMissingError } from './temporal-errors.js';
import { temporalConnectionOptions, temporalUsesTls } from './temporal-connection.js';

/** Temporal could not be reached: start it or fix TEMPORAL_ADDRESS. */
export class TemporalUnreachableError extends Error {
  override readonly name = 'TemporalUnreachableError';
  readonly retryable = true;
  /**
   * Nothing answered in time (down, starting, or a network away): it may answer later. False
   * for an answer that will not change by waiting (a refused key, not a Temporal frontend).
   */
  readonly transient: boolean;
  /** Why, in words (`Connection refused`), without the advice. */
  readonly reason: string | undefined;
  constructor(message: string, options: { transient?: boolean; reason?: string } = {}) {
    super(message);
    this.transient = options.transient ?? false;
    this.reason = options.reason;
  }
}

/** gRPC's UNAVAILABLE: no connection, or it broke. */
const GRPC_UNAVAILABLE = 14;

/**
 * Whether Connection.connect failed because nothing answered (its wait for a ready channel
 * timed out, or its first call found no connection), not because something answered no.
 */
function nothingAnswered(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (/Failed to connect before the deadline/.test(error.message)) return true;
  const cause = error.cause;
  return isGrpcServiceError(cause) && Number(cause.code) === GRPC_UNAVAILABLE;
}

/** gRPC's NOT_FOUND and CANCELLED (grpc-js is the SDK's dependency, not ours). */
const GRPC_NOT_FOUND = 5;
const GRPC_CANCELLED = 1;
/** What grpc-js answers when the server is no gRPC server (an HTTP 404 for its path, a page). */
const GRPC_UNIMPLEMENTED = 12;

/**
 * Throws TemporalNamespaceMissingError when the server says TEMPORAL_NAMESPACE does not exist.
 * Any other answer (a key without permission to describe it, a slow server) is left for the
 * calls that follow to report: only a sure NOT_FOUND is refused here.
 */
export async function requireNamespace(
  describe: () => Promise<unknown>,
  config: Config,
): Promise<void> {
  try {
    await describe();
  } catch (error) {
    if (isGrpcServiceError(error) && Number(error.code) === GRPC_NOT_FOUND)
      throw new TemporalNamespaceMissingError(config);
    // Something answers there, but not Temporal's frontend: the UI's port, a proxy, another
    // service. Every call would fail the same way, with grpc-js's words alone.
    if (
      isGrpcServiceError(error) &&
      (Number(error.code) === GRPC_UNIMPLEMENTED || /Received HTTP status code/.test(error.message))
    ) {
      const reason = error.message.split('\n')[0];
      throw new TemporalUnreachableError(
        `the server at TEMPORAL_ADDRESS ${config.temporal.address} is not a Temporal frontend (${reason}): ` +
          `give the gRPC port (7233 by default, not the UI's), or start a local one with 'ebsync temporal'`,
        reason === undefined ? {} : { reason },
      );
    }
  }
}

type GrpcInterceptor = NonNullable<ConnectionOptions['interceptors']>[number];

/** The deadline, in ms from its start, that a call made in a `withCallDeadlines` scope gets. */
const callDeadlines = new AsyncLocalStorage<number>();

/**
 * Runs `fn` with every Temporal call it makes that has no deadline of its own ending within
 * `ms` of its start, its retries included (a call with its own deadline keeps it). Without
 * one, the SDK's retries of an unreachable server (10 attempts, up to 5 s apart) held each
 * call for about 20 s, and the status page's refresh, a few of them in a row, for 45 to 60 s.
 */
export function withCallDeadlines<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  return callDeadlines.run(ms, fn);
}

type NextCall = Parameters<GrpcInterceptor>[1];

/**
 * Calls from `nextCall` that end when `signal` aborts. The SDK cancels the call it made when
 * its caller's signal aborts, and that cancel reaches the first attempt only: a retry is a new
 * call beneath it. A query the server refused at once ("consistent query buffer is full", a
 * RESOURCE_EXHAUSTED it retries a second later) then ran on to its deadline after a Ctrl-C,
 * and held `ebsync dev`'s exit, whose status page waits for its last report, for 10 s.
 */
function attemptsCancelledBy(signal: AbortSignal, nextCall: NextCall): NextCall {
  return (options) => {
    const attempt = nextCall(options) as ReturnType<GrpcInterceptor>;
    const cancel = (): void =>
      attempt.cancelWithStatus(GRPC_CANCELLED, 'cancelled: its caller stopped');
    const start = attempt.start.bind(attempt);
    attempt.start = (metadata, listener) => {
      start(metadata, {
        onReceiveMetadata: (received) => listener?.onReceiveMetadata?.(received),
        onReceiveMessage: (message: unknown) => listener?.onReceiveMessage?.(message),
        onReceiveStatus: (status) => {
          signal.removeEventListener('abort', cancel);
          listener?.onReceiveStatus?.(status);
        },
      });
      // An attempt started after the abort (its backoff timer was already set) ends at once.
      if (signal.aborted) cancel();
      else signal.addEventListener('abort', cancel, { once: true });
    };
    return attempt;
  };
}

/**
 * A connection's calls, so that it closes only once they have all ended. The SDK's retry
 * interceptor retries a failed call on a timer; a retry that fires after the channel is closed
 * throws "Channel has been shut down" out of that timer, uncaught, and the process dies with a
 * stack trace. Ctrl-C in `ebsync dev` stops the dev server with everything else, so calls fail
 * and wait to retry just as their clients close. Once closing, a failed call is not retried
 * again: the wait is the backoff already started and one more attempt, at most.
 */
function callsOfConnection(endCallsOn?: AbortSignal): {
  interceptors: GrpcInterceptor[];
  closeAfterCalls: (connection: Connection) => Promise<void>;
  /** The connection whose abort signals (`withAbortSignal`) its calls honour. */
  attach: (connection: Connection) => void;
} {
  let contexts: Connection['callContextStorage'] | undefined;
  let calls = 0;
  let closing = false;
  let closeNow: (() => void) | undefined;
  const retry = defaultGrpcRetryOptions();
  // Outermost, so a call ends with its final status, after the retries.
  const counting: GrpcInterceptor = (options, nextCall) => {
    const perCall = callDeadlines.getStore();
    const unbounded = options.deadline === undefined || options.deadline === Infinity;
    // grpc-js types what nextCall returns more widely than the InterceptingCall it is.
    const call = nextCall(
      perCall !== undefined && unbounded ? { ...options, deadline: Date.now() + perCall } : options,
    ) as ReturnType<GrpcInterceptor>;
    // The SDK cancels a call when its scope's signal aborts, but one made after the abort runs
    // on to its deadline (it only listens for the event): a Ctrl-C that came between two calls
    // of a status page or the main job held the exit for their 10 or 30 s. Read here, in the
    // caller's context.
    const aborted = contexts?.getStore()?.abortSignal?.aborted === true;
    const start = call.start.bind(call);
    call.start = (metadata, listener) => {
      calls += 1;
      let ended = false;
      const end = (): void => {
        if (ended) return;
        ended = true;
        calls -= 1;
        if (calls === 0) closeNow?.();
      };
      try {
        start(metadata, {
          onReceiveMetadata: (received) => listener?.onReceiveMetadata?.(received),
          onReceiveMessage: (message: unknown) => listener?.onReceiveMessage?.(message),
          onReceiveStatus: (status) => {
            try {
              listener?.onReceiveStatus?.(status);
            } finally {
              end();
            }
          },
        });
        if (aborted) call.cancelWithStatus(GRPC_CANCELLED, 'cancelled: its caller stopped');
      } catch (error) {
        end();
        throw error;
      }
    };
    return call;
  };
  // Per call, so that its retries stop at its deadline and once its caller's signal aborts
  // (a refresh that failed, a Ctrl-C): the SDK's own interceptor would wait out a backoff past
  // the deadline and start an attempt for a caller that no longer waits for it.
  const retrying: GrpcInterceptor = (options, nextCall) => {
    const caller = contexts?.getStore()?.abortSignal;
    const signal =
      caller && endCallsOn ? AbortSignal.any([caller, endCallsOn]) : (caller ?? endCallsOn);
    const deadline =
      options.deadline === undefined || options.deadline === Infinity
        ? Infinity
        : Number(options.deadline);
    const left = (): number => deadline - Date.now();
    return makeGrpcRetryInterceptor({
      delayFunction: (attempt, status) =>
        Math.max(0, Math.min(retry.delayFunction(attempt, status), left())),
      retryableDecider: (attempt, status) =>
        !closing &&
        signal?.aborted !== true &&
        left() > 0 &&
        retry.retryableDecider(attempt, status),
    })(options, signal ? attemptsCancelledBy(signal, nextCall) : nextCall);
  };
  return {
    interceptors: [counting, retrying],
    attach: (connection) => {
      contexts = connection.callContextStorage;
    },
    closeAfterCalls: (connection) => {
      closing = true;
      return new Promise<void>((resolve, reject) => {
        // In the tick the count reaches 0: a call started after that meets a closed channel at
        // once and fails (a rejected promise); it is not left waiting on a timer.
        closeNow = () => {
          closeNow = undefined;
          connection.close().then(resolve, reject);
        };
        if (calls === 0) closeNow();
      });
    },
  };
}

/**
 * The reason in an error of the worker's Rust core, which quotes its transport's debug output
 * (`tonic::transport::Error(Transport, ConnectError(… Os { code: 111, kind: ConnectionRefused,
 * message: "Connection refused" }))`): the innermost message it quotes; other errors as they
 * are.
 */
export function connectReason(error: unknown): string {
  const first = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
  if (!first.includes('tonic::')) return first;
  const quoted = [...first.matchAll(/(?:message|error): "([^"]+)"|\("([^"]+)"/g)].map(
    (m) => m[1] ?? m[2],
  );
  return quoted.at(-1) ?? first;
}

/** Why Temporal could not be reached, and what to do, in one line. */
export function unreachableLine(config: Config, error: unknown): string {
  const reason = connectReason(error);
  // A TLS client at a server without TLS fails as any unreachable server does.
  const tls = temporalUsesTls(config)
    ? '; TLS is on (TEMPORAL_TLS, TEMPORAL_TLS_* or TEMPORAL_API_KEY): check that the server there serves TLS'
    : '';
  return `cannot reach Temporal at ${config.temporal.address} (${reason})${tls}; start a local one with 'ebsync temporal' or set TEMPORAL_ADDRESS`;
}

/**
 * Node warns (DEP0123) when a TLS connection names an IP address as its server, which the
 * gRPC client does for a TEMPORAL_ADDRESS such as 127.0.0.1:7233: two lines of noise before
 * the one that says what happened. Only that warning is left out.
 */
let ipServerNameQuiet = false;
function quietIpServerNameWarning(): void {
  if (ipServerNameQuiet) return;
  ipServerNameQuiet = true;
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = (...args: unknown[]) => {
    const [, second, third] = args;
    const code =
      typeof second === 'object' && second !== null ? (second as { code?: unknown }).code : third;
    if (code === 'DEP0123') return;
    emit(...args);
  };
}

/**
 * How soon a client's channel tries Temporal again after losing it. gRPC's own backoff grows
 * to 120 s: after an outage of a minute its next try came up to 40 s after Temporal was back,
 * and the status page answered 503 (and the receiver refused deliveries) all that while. A
 * try every 2 s at most costs a refused TCP connection while Temporal is away.
 */
const RECONNECT_CHANNEL_ARGS = {
  'grpc.initial_reconnect_backoff_ms': 500,
  'grpc.max_reconnect_backoff_ms': 2_000,
};

/**
 * A Temporal client with ebsync's payload encryption, for the CLI and tools. Its calls all end
 * (cancelled, retries included) once `endCallsOn` aborts, whoever made them.
 */
export async function connectClient(
  config: Config,
  ending: { endCallsOn?: AbortSignal } = {},
): Promise<{ client: Client; close: () => Promise<void> }> {
  const calls = callsOfConnection(ending.endCallsOn);
  // Read before connecting: a TLS file that is missing or no PEM is a bad setting (one line,
  // exit 2), not a Temporal that cannot be reached.
  const options = temporalConnectionOptions(config);
  if (options.tls) quietIpServerNameWarning();
  // Made lazily and connected here (what Connection.connect does), so that a connection that
  // failed is closed: its channel would otherwise go on trying every 2 s while a process that
  // outlives the failure (the status page) runs.
  const connection = Connection.lazy({
    ...options,
    channelArgs: RECONNECT_CHANNEL_ARGS,
    interceptors: calls.interceptors,
    connectTimeout: '5s',
  });
  try {
    await connection.ensureConnected();
    calls.attach(connection);
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw new TemporalUnreachableError(unreachableLine(config, error), {
      transient: nothingAnswered(error),
      reason: connectReason(error),
    });
  }
  try {
    await requireNamespace(
      () =>
        connection.withDeadline(Date.now() + 10_000, () =>
          connection.workflowService.describeNamespace({ namespace: config.temporal.namespace }),
        ),
      config,
    );
  } catch (error) {
    await calls.closeAfterCalls(connection);
    throw error;
  }
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverter(config),
  });
  return { client, close: () => calls.closeAfterCalls(connection) };
}

/**
 * A client that connects on first use and reconnects after Temporal comes back: for servers
 * (the webhook receiver) that must start, and answer 503, while Temporal is away.
 */
export function lazyClient(config: Config): { client: Client; close: () => Promise<void> } {
  const calls = callsOfConnection();
  const connection = Connection.lazy({
    ...temporalConnectionOptions(config),
    channelArgs: RECONNECT_CHANNEL_ARGS,
    interceptors: calls.interceptors,
  });
  calls.attach(connection);
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverter(config),
  });
  return { client, close: () => calls.closeAfterCalls(connection) };
}
