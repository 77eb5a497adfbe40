import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import { redact, scrubText } from './redact.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level?: LevelWithSilent;
  name?: string;
  /** Where JSON lines go; stdout by default. Tests pass a stream to read what was printed. */
  destination?: DestinationStream;
}

/** JSON logger whose every line passes through redaction, message text included. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      name: options.name ?? 'ebsync',
      base: { pid: process.pid },
      formatters: {
        log: (object) => redact(object) as Record<string, unknown>,
      },
      hooks: {
        logMethod(args, method) {
          const clean = args.map((arg: unknown) =>
            typeof arg === 'string' ? scrubText(arg) : arg,
          );
          method.apply(this, clean as Parameters<typeof method>);
        },
      },
    },
    options.destination,
  );
}
