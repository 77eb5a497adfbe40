#!/usr/bin/env node
// The `ebsync` command. It runs the compiled tree in dist/ that `npm ci` builds (cli/build.js,
// as the `prepare` script) while that tree matches the sources (cli/build-state.js), and the
// TypeScript sources through tsx otherwise: an edited source never runs stale, and a clone
// needs no build step of its own.
//
// ebsync needs Node 22.12 or newer (better-sqlite3 13; Node 20 is end of life). Where the
// machine's Node is older, the project's devDependency `node` (Node 24 from the npm registry)
// runs it instead, so `node cli/ebsync.js` works the same as `npm start` and `npx ebsync`.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import module from 'node:module';
import { constants } from 'node:os';
import { URL, fileURLToPath } from 'node:url';
import { STAMP_FILE, isFresh } from './build-state.js';

// Commands that run a Temporal worker start their process with V8 and glibc tuned for a small
// footprint (worker/heap-mode.ts says why; its WORKER_LAUNCH holds the same values, and a test
// checks a started worker against it); both read these only when the process starts.
// A value of the user's wins.
const WORKER_NODE_FLAGS = ['--max-semi-space-size=8'];
const WORKER_ENV = { MALLOC_ARENA_MAX: '1', MALLOC_TRIM_THRESHOLD_: '131072' };
const WORKER_COMMANDS = new Set(['dev', 'worker']);

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
const tooOld = major < 22 || (major === 22 && minor < 12);
const command = process.argv.slice(2).find((arg) => !arg.startsWith('-'));
const forWorker = command !== undefined && WORKER_COMMANDS.has(command);
/** A V8 flag's name, as V8 reads it: `--max_semi_space_size=16` is `--max-semi-space-size`. */
const flagName = (flag) => flag.split('=')[0].replaceAll('_', '-');
// A flag the user gave (with any value, on the command line or in NODE_OPTIONS) is left to
// theirs: V8 takes the last value given, so adding ours would override it.
const userFlags = new Set(
  [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].map(flagName),
);
const nodeFlags = forWorker
  ? WORKER_NODE_FLAGS.filter((flag) => !userFlags.has(flagName(flag)))
  : [];
const env = forWorker ? { ...WORKER_ENV, ...process.env } : process.env;
const envMissing = forWorker && Object.keys(WORKER_ENV).some((name) => !(name in process.env));
const script = fileURLToPath(import.meta.url);

const retune = nodeFlags.length > 0 || envMissing;

if (!tooOld && retune && typeof process.execve === 'function') {
  // Node 22.15+: this process becomes the one with the flags; same pid, nothing in between.
  try {
    process.execve(
      process.execPath,
      [process.execPath, ...process.execArgv, ...nodeFlags, script, ...process.argv.slice(2)],
      env,
    );
  } catch {
    // Where the system refuses, the child process below serves instead.
  }
}

if (tooOld || retune) {
  const bundled = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (tooOld && (!existsSync(bundled) || process.env.EBSYNC_NODE_REEXEC === '1')) {
    process.stderr.write(
      `ebsync: Node ${process.versions.node} is too old: ebsync needs Node 22.12 or newer ` +
        `(22 and 24 are tested); run 'npm ci' to get the project's Node 24, or install Node 24\n`,
    );
    process.exit(2);
  }
  const node = tooOld ? bundled : process.execPath;
  const args = [...process.execArgv, ...nodeFlags, script, ...process.argv.slice(2)];
  // The child gets a process group of its own, so each signal reaches it exactly once: from
  // here, whether it was Ctrl-C (sent to this foreground group) or a kill of this process.
  // A SIGKILL of this process forwards nothing, so the child also holds an IPC channel to it,
  // which the kernel closes when this process ends however it ends: the child takes that as
  // SIGTERM (below), rather than run on, re-parented, polling and running activities.
  const child = spawn(node, args, {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    detached: true,
    env: { ...env, EBSYNC_NODE_REEXEC: '1' },
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('exit', (code, signal) =>
    process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)),
  );
  await new Promise(() => {});
}

// Started by a launcher above: when it ends (even by SIGKILL) its IPC channel closes, and this
// process stops as on SIGTERM, each command by its own handler (a worker lets running
// activities finish). The channel is unref'd: it alone never keeps this process alive.
if (process.env.EBSYNC_NODE_REEXEC === '1' && process.channel) {
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  process.channel.unref();
}

// V8's compiled code kept on disk (os.tmpdir()/node-compile-cache, keyed by each file's
// content): the Temporal SDK's generated protobuf modules then load in a fraction of the time.
module.enableCompileCache?.();

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
if (isFresh(dist)) {
  await import('../dist/cli/main.js');
} else {
  if (process.stderr.isTTY) {
    const why = existsSync(`${dist}${STAMP_FILE}`)
      ? 'the sources changed since the last build'
      : 'there is no build in dist/';
    process.stderr.write(
      `ebsync: running the TypeScript through tsx (a slower start): ${why}; 'npm run build' compiles it\n`,
    );
  }
  const { register } = await import('tsx/esm/api');
  register();
  await import('./main.ts');
}
