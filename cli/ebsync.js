#!/usr/bin/env node
// Runs the TypeScript sources directly, so a fresh clone needs no build step.
//
// ebsync needs Node 22.12 or newer (better-sqlite3 13; Node 20 is end of life). Where the
// machine's Node is older, the project's devDependency `node` (Node 24 from the npm registry)
// runs it instead, so `node cli/ebsync.js` works the same as `npm start` and `npx ebsync`.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { URL, fileURLToPath } from 'node:url';

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  const bundled = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (!existsSync(bundled) || process.env.EBSYNC_NODE_REEXEC === '1') {
    process.stderr.write(
      `ebsync: Node ${process.versions.node} is too old: ebsync needs Node 22.12 or newer ` +
        `(22 and 24 are tested); run 'npm ci' to get the project's Node 24, or install Node 24\n`,
    );
    process.exit(2);
  }
  // The child gets a process group of its own, so each signal reaches it exactly once: from
  // here, whether it was Ctrl-C (sent to this foreground group) or a kill of this process.
  const child = spawn(bundled, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    detached: true,
    env: { ...process.env, EBSYNC_NODE_REEXEC: '1' },
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('exit', (code, signal) =>
    process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)),
  );
  await new Promise(() => {});
}

const { register } = await import('tsx/esm/api');
register();
await import('./main.ts');
