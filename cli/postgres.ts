import { maskCredentials } from '../config/database-locations.js';
import {
  localPostgresDir,
  POSTGRES_HOST,
  PostgresServerError,
  startPostgresServer,
} from '../worker/postgres-server.js';
import { PostgresSetupError } from '../worker/postgres-binaries.js';
import type { PostgresFlags } from './commands/postgres.js';
import { UserError } from './errors.js';
import { loadStartupConfig } from './startup-config.js';
import { makeDataDir } from '../store/private-files.js';
import { listenRefusal } from './network-refusals.js';
import { stopSignal } from './stop-signals.js';
import { runUntilStopped } from './stopped-exit.js';

const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * `ebsync postgres`. The URL it prints has the password masked: the password is in the
 * cluster's own `password` file (owner-only), and the export line reads it from there, so it
 * shows in no terminal scrollback or log.
 */
export async function postgresCommand(flags: PostgresFlags): Promise<void> {
  await runUntilStopped(async () => {
    if (!DATABASE_NAME.test(flags.database)) {
      throw new UserError(
        `--database '${flags.database}' is not allowed: expected lowercase letters, digits and _ (not first), at most 63`,
        2,
      );
    }
    const config = loadStartupConfig();
    makeDataDir(config.dataDir);
    const dir = localPostgresDir(config.dataDir);
    let server;
    try {
      server = await startPostgresServer({
        dir,
        dataDir: config.dataDir,
        database: flags.database,
        ...(flags.port === undefined ? {} : { port: flags.port }),
      });
    } catch (error) {
      // Its --port in use (or not to be had): said as `sandbox` and `webhooks serve` say it.
      const refusal =
        flags.port === undefined
          ? undefined
          : listenRefusal(error, {
              host: POSTGRES_HOST,
              port: flags.port,
              hostFrom: '--port',
              portFrom: '--port',
            });
      if (refusal) throw refusal;
      if (error instanceof PostgresServerError || error instanceof PostgresSetupError) {
        // The server's last lines, each on a line of its own, as Postgres wrote them.
        throw new UserError(
          `cannot start a local Postgres in ${dir}: ${error.message}`.split('\n'),
        );
      }
      throw error;
    }
    // A second start attaches to the one running: on its port, which may not be the one asked.
    if (
      !server.started &&
      flags.port !== undefined &&
      flags.port !== 0 &&
      flags.port !== server.port
    ) {
      throw new UserError(
        `the Postgres of ${dir} already runs on port ${server.port}, not --port ${flags.port}: use that port, or stop it (Ctrl-C where it was started) to run it on another`,
      );
    }
    const url = `postgres://postgres:$(cat '${dir}/password')@${POSTGRES_HOST}:${server.port}/${flags.database}`;
    // Listening for the stop signals before saying "ready" (as `ebsync sandbox` does): a
    // SIGTERM sent as soon as the line is read must stop the server, not end this process.
    const stopped = server.started ? stopSignal() : undefined;
    process.stdout.write(
      `Postgres ${server.started ? 'ready' : 'already running'} at ${maskCredentials(server.url)}\n` +
        `  data: ${dir}\n` +
        `  use it as the shared store:  export EBSYNC_STORE_URL="${url}"\n` +
        `  or as a destination:         ebsync sync --to "${url}"\n` +
        `  stop: ${server.started ? 'Ctrl-C' : 'Ctrl-C where it was started'}\n`,
    );
    if (stopped) {
      // The server may also end on its own (killed, out of memory, its disk gone): the stores
      // and destinations on it then fail, so this command must say it, not end in silence.
      const died = await Promise.race([stopped.then(() => null), server.exited]);
      if (died === null) {
        await server.stop().catch(() => undefined);
        return;
      }
      const how = died.signal ? `killed by ${died.signal}` : `exit code ${died.code}`;
      throw new UserError(
        `the local Postgres of ${dir} stopped on its own (${how}); its data is kept: start it again with 'ebsync postgres'`,
      );
    }
  });
}
