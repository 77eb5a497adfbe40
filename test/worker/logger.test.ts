import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig, ConfigError } from '../../config/index.js';
import { createLogger, type LogFormat } from '../../worker/logger.js';

/** Lines as printed by a logger of this format, to a stream that is a terminal or not. */
function printed(
  format: LogFormat | undefined,
  isTTY: boolean,
  log: (l: ReturnType<typeof createLogger>) => void,
): string {
  const chunks: string[] = [];
  const logger = createLogger({
    ...(format ? { format } : {}),
    destination: { isTTY, write: (line: string) => void chunks.push(line) },
  });
  log(logger);
  return chunks.join('');
}

const isJsonLines = (text: string): boolean =>
  text
    .trim()
    .split('\n')
    .every((line) => {
      try {
        return typeof JSON.parse(line) === 'object';
      } catch {
        return false;
      }
    });

const KEY = 'ik_live_9Qm2xV7pL0aZ';
const TOKEN = 'eat_Tn4Kd8sWc1Yb6Hf3Ju5Ge0Ri9Oy2Pk';
const logSecrets = (logger: ReturnType<typeof createLogger>) => {
  logger.info(
    { apiKey: KEY, request: { headers: { authorization: `Bearer ${TOKEN}` } } },
    `retrying with ${KEY}`,
  );
  logger.warn(`token ${TOKEN} refused`);
};

describe('log format', () => {
  it('auto: readable lines on a terminal, JSON lines otherwise', () => {
    const terminal = printed('auto', true, (l) => l.info({ leads: 3 }, 'page read'));
    expect(isJsonLines(terminal)).toBe(false);
    expect(terminal).toMatch(/INFO.*page read/);
    expect(terminal).toMatch(/leads: 3/);
    const pipe = printed(undefined, false, (l) => l.info({ leads: 3 }, 'page read'));
    expect(isJsonLines(pipe)).toBe(true);
    expect(JSON.parse(pipe)).toMatchObject({ msg: 'page read', leads: 3, level: 30 });
  });

  it('json and pretty force their format whatever the output is', () => {
    expect(isJsonLines(printed('json', true, (l) => l.info('x')))).toBe(true);
    const pretty = printed('pretty', false, (l) => l.info('hello there'));
    expect(isJsonLines(pretty)).toBe(false);
    expect(pretty).toMatch(/INFO.*hello there/);
    // Not a terminal: no colour codes in a file.
    expect(pretty).not.toContain('\u001b[');
  });

  it.each(['json', 'pretty'] as const)(
    '%s: secrets in messages and objects are masked',
    (format) => {
      const text = printed(format, format === 'pretty', logSecrets);
      expect(text).not.toContain(KEY);
      expect(text).not.toContain(TOKEN);
      expect(text).toContain('retrying with [redacted]');
      expect(text).toContain('token [redacted] refused');
      expect(text.match(/\[redacted\]/g)?.length).toBeGreaterThanOrEqual(4);
    },
  );

  it('EBSYNC_LOG_FORMAT takes auto, json or pretty, and refuses anything else in one line', () => {
    expect(loadConfig({}).log.format).toBe('auto');
    expect(loadConfig({ EBSYNC_LOG_FORMAT: 'json' }).log.format).toBe('json');
    expect(loadConfig({ EBSYNC_LOG_FORMAT: 'pretty' }).log.format).toBe('pretty');
    let error: unknown;
    try {
      loadConfig({ EBSYNC_LOG_FORMAT: 'xml' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).lines).toEqual([
      "EBSYNC_LOG_FORMAT='xml' is not allowed: expected auto, json or pretty",
    ]);
  });
});

/** Runs a logging process under `script`, which gives it a real terminal; returns what it printed. */
function underTerminal(env: NodeJS.ProcessEnv): Promise<string> {
  const program = fileURLToPath(new URL('../fixtures/log-lines.ts', import.meta.url));
  const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', `${tsx} ${program}`, '/dev/null'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${out}`)),
    );
  });
}

describe('a process on a real terminal', () => {
  it('prints readable lines, every one of them, and JSON with EBSYNC_LOG_FORMAT=json; no secret in either', async () => {
    const pretty = await underTerminal({ EBSYNC_LOG_FORMAT: '' });
    expect(pretty).toMatch(/INFO.*line 1 of 50/);
    // Written synchronously: the last line before exit is there.
    expect(pretty).toMatch(/INFO.*line 50 of 50/);
    expect(pretty).not.toMatch(/"level":/);
    const json = await underTerminal({ EBSYNC_LOG_FORMAT: 'json' });
    const lines = json
      .trim()
      .split(/\r?\n/)
      .map((line) => JSON.parse(line) as { msg: string });
    expect(lines).toHaveLength(50);
    expect(lines.at(-1)?.msg).toBe('line 50 of 50 with [redacted]');
    for (const text of [pretty, json]) expect(text).not.toContain('ik_fixture_secret_key');
  }, 60_000);
});
