import {
  pino,
  type Bindings,
  type DestinationStream,
  type Logger,
  type LevelWithSilent,
} from 'pino';
import { redact, scrubText } from './redact.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level?: LevelWithSilent;
  name?: string;
  /** Where JSON lines go; stdout by default. Tests pass a stream to read what was printed. */
  destination?: DestinationStream;
}

/** The message pino would print for a call without one: that of a logged Error or of obj.err. */
function impliedMessage(first: unknown): string | undefined {
  if (first instanceof Error) return first.message;
  if (typeof first !== 'object' || first === null || 'msg' in first) return undefined;
  const message = (first as { err?: { message?: unknown } }).err?.message;
  return typeof message === 'string' ? message : undefined;
}

/** JSON logger whose every line passes through redaction, message text included. */
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
            typeof arg === 'string' ? scrubText(arg) : index === 0 ? arg : redact(arg),
          );
          // Without a message pino prints the error's own message, unscrubbed: pass it scrubbed.
          const implied = clean.length === 1 ? impliedMessage(args[0]) : undefined;
          if (implied !== undefined) clean.push(scrubText(implied));
          method.apply(this, clean as Parameters<typeof method>);
        },
      },
    },
    options.destination,
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
