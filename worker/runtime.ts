import {
  Runtime,
  makeTelemetryFilterString,
  type Logger as TemporalLogger,
} from '@temporalio/worker';
import type { LogLevel, LogMetadata } from '@temporalio/common';
import type { Logger } from './logger.js';

const LEVELS: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** Sends the SDK's own log lines (and core's, forwarded) through our redacting pino logger. */
export class PinoTemporalLogger implements TemporalLogger {
  constructor(private readonly logger: Logger) {}
  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    this.logger[LEVELS[level]](meta ?? {}, message);
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

let installed = false;

/**
 * Installs the Temporal runtime once per process. The SDK handles SIGINT/SIGTERM by asking
 * every worker to shut down, which lets running activities finish within shutdownGraceTime.
 */
export function installRuntime(logger: Logger): void {
  if (installed) return;
  Runtime.install({
    logger: new PinoTemporalLogger(logger),
    shutdownSignals: ['SIGINT', 'SIGTERM'],
    telemetryOptions: {
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN' }) },
    },
  });
  installed = true;
}

/**
 * Ends the runtime after a start-up that failed. Installed, it keeps the process alive (it
 * polls the core's logs) and holds SIGINT/SIGTERM for workers that will never exist.
 */
export async function endRuntime(): Promise<void> {
  if (!installed) return;
  installed = false;
  await Runtime.instance().shutdown();
}
