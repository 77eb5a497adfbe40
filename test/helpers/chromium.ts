import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const DEFAULT_PATH = '/usr/bin/chromium';

/**
 * Debian's Chromium for playwright-core (whose own browser download cannot work here): at
 * CHROMIUM_PATH or /usr/bin/chromium, installed with apt-get when missing and running as root
 * (a fresh CI machine). Throws one line saying what to do when neither works; never skips.
 */
export function ensureChromium(): string {
  const path = process.env.CHROMIUM_PATH || DEFAULT_PATH;
  if (existsSync(path)) return path;
  if (process.env.CHROMIUM_PATH) {
    throw new Error(`CHROMIUM_PATH=${path} does not exist; point it at a Chromium binary`);
  }
  if (process.getuid?.() !== 0) {
    throw new Error(
      `no Chromium at ${DEFAULT_PATH} and not root: run 'sudo apt-get install -y chromium' or set CHROMIUM_PATH`,
    );
  }
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update'], { stdio: 'ignore', env, timeout: 300_000 });
    execFileSync('apt-get', ['install', '-y', 'chromium'], {
      stdio: 'ignore',
      env,
      timeout: 600_000,
    });
  } catch (error) {
    throw new Error(
      `'apt-get install -y chromium' failed (${(error as Error).message.split('\n')[0]}); install Chromium or set CHROMIUM_PATH`,
    );
  }
  if (!existsSync(DEFAULT_PATH)) {
    throw new Error(`'apt-get install -y chromium' left no ${DEFAULT_PATH}; set CHROMIUM_PATH`);
  }
  return DEFAULT_PATH;
}
