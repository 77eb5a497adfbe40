import {
  pino,
  type Bindings,
  type DestinationStream,
  type Logger,
  type LevelWithSilent,
} from 'pino';
import { isColorSupported, prettyFactory } from 'pino-pretty';
import { redact, scrubLogText } from './redact.js';

export type { Logger } from 'pino';

/** `json`: one JSON object a line; `pretty`: readable lines; `auto`: pretty on a terminal. */
export type LogFormat = 'auto' | 'json' | 'pretty';

export interface LoggerOptions {
  level?: LevelWithSilent;
  name?: string;
  format?: LogFormat;
  /**
   * Where lines go; stdout by default. Tests pass a stream to read what was printed (with
   * `isTTY` to stand for a terminal).
   */
  destination?: DestinationStream & { isTTY?: boolean };
}

/**
 * Pretty lines are made from the JSON line pino has already redacted, in the same call and
 * synchronously: no transport thread that could lose the last lines when the process exits.
 */
function prettyDestination(out: DestinationStream, colorize: boolean): DestinationStream {
  const prettify = prettyFactory({
    colorize,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
  return { write: (line: string) => out.write(prettify(line)) };
}

function destinationFor(options: LoggerOptions): DestinationStream {
  const out = options.destination ?? pino.destination({ dest: 1, sync: true });
  const terminal = options.destination
    ? options.destination.isTTY === true
    : process.stdout.isTTY === true;
  const format = options.format ?? 'auto';
  if (format === 'json' || (format === 'auto' && !terminal)) return out;
  return prettyDestination(out, terminal && isColorSupported);
}

/** The message pino would print for a call without one: that of a logged Error or of obj.err. */
function impliedMessage(first: unknown): string | undefined {
  if (first instanceof Error) return first.message;
  if (typeof first !== 'object' || first === null || 'msg' in first) return undefined;
  const message = (first as { err?: { message?: unknown } }).err?.message;
  return typeof message === 'string' ? message : undefined;
}

/** Logger whose every line passes through redaction, message text included, in either format. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const logger = pino(
    {
      level: options.level ?? 'info',
      name: options.name ?? 'ebsync',
      base: { pid: process.pid },
      // redact() has already turned errors into plain objects; pino's own err serializer
      // would relabel every one of them as type "Object".
      serializers: { err: (value: unknown) => value },
      formatters: {
        log: (object) => redact(object) as Record<string, unknown>,
      },
      hooks: {
        logMethod(args, method) {
          const clean: unknown[] = args.map((arg: unknown, index) =>
            typeof arg === 'string' ? scrubLogText(arg) : index === 0 ? arg : redact(arg),
          );
          // Without a message pino prints the error's own message, unscrubbed: pass it scrubbed.
          const implied = clean.length === 1 ? impliedMessage(args[0]) : undefined;
          if (implied !== undefined) clean.push(scrubLogText(implied));
          method.apply(this, clean as Parameters<typeof method>);
        },
      },
    },
    destinationFor(options),
  );
  // pino skips formatters for a child's bindings; redact them on the way in. Children are
  // created from their parent's prototype, so grandchildren go through here too.
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with each child's own `this`
  const pinoChild = logger.child;
  logger.child = function child(this: Logger, bindings, childOptions) {
    return pinoChild.call(this, redact(bindings) as Bindings, childOptions);
  } as Logger['child'];
  return logger;
}
