import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CommanderError, type Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../config/settings.js';
import { ROUTES } from '../api/routes.js';
import { buildProgram } from '../cli/program.js';
import specRoutes from './fixtures/spec-routes.json' with { type: 'json' };

/** The docs promise what the code does: every setting, command and route is documented. */
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const DOCS = [
  'README.md',
  ...readdirSync(new URL('../docs/', import.meta.url))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The routes the spec states, kept in the repository (test/fixtures/spec-routes.json). */
const SPEC_ROUTES: { method: string; path: string }[] = specRoutes.routes;

/** Path parameter names differ ({id} in one place, {lead_id} in another): compare shapes. */
const routeShape = (method: string, path: string): string =>
  `${method} ${path.replace(/\{[^}]*\}/g, '{}').replace(/\/$/, '')}`;

/**
 * The service's contract sits beside the repository (`../shared/`, as in CI);
 * EBSYNC_SPEC_FILE points elsewhere, e.g. from a worktree.
 */
const specFile =
  process.env.EBSYNC_SPEC_FILE ??
  fileURLToPath(new URL('../../shared/spec/event-business-service.md', import.meta.url));

/** Every command and subcommand of the real definition, as its words after `ebsync`. */
function commandPaths(command: Command, prefix: string[] = []): string[][] {
  return command.commands.flatMap((sub) => {
    const path = [...prefix, sub.name()];
    return [path, ...commandPaths(sub, path)];
  });
}

/**
 * The `ebsync …` command lines a doc shows: in code blocks (shell lines, and `$ ` lines of
 * console blocks, whose other lines are output) and in inline code, `npx ebsync` and
 * environment assignments in front included. Returns the words after `ebsync`.
 */
function docCommands(markdown: string): { line: string; args: string[] }[] {
  const candidates: string[] = [];
  let fence: string | undefined;
  for (const raw of markdown.split('\n')) {
    const opening = /^\s*```(\w*)/.exec(raw);
    if (opening) {
      fence = fence === undefined ? opening[1] || 'text' : undefined;
      continue;
    }
    if (fence === undefined) {
      for (const m of raw.matchAll(/`([^`]+)`/g)) candidates.push(m[1] ?? '');
    } else if (fence === 'console') {
      if (raw.startsWith('$ ')) candidates.push(raw.slice(2));
    } else if (['sh', 'bash', 'shell'].includes(fence)) {
      candidates.push(raw);
    }
  }
  const found: { line: string; args: string[] }[] = [];
  for (const candidate of candidates) {
    const code = candidate.replace(/(^|\s)#.*$/, '');
    for (const part of code.split(/&&|\|\||;|\|(?=\s)/)) {
      const words = part.trim().split(/\s+/).filter(Boolean);
      while (words[0] !== undefined && /^[A-Z_][A-Z0-9_]*=/.test(words[0])) words.shift();
      if (words[0] === 'npx') words.shift();
      if (words[0] !== 'ebsync') continue;
      // `ebsync …` stands for any command; a lone ellipsis is no argument.
      const args = words.slice(1).filter((word) => word !== '…' && word !== '...');
      found.push({ line: part.trim(), args: args.map((w) => w.replace(/^(['"])(.*)\1$/, '$2')) });
    }
  }
  return found;
}

class Parsed extends Error {}

/**
 * Parses args with the real commander definition and runs no action: a preAction hook
 * throws before any. Returns the error commander gave, or undefined when the line parses.
 */
async function parseOnly(args: string[]): Promise<string | undefined> {
  const program = buildProgram();
  let printed = '';
  const all = (command: Command): Command[] => [command, ...command.commands.flatMap(all)];
  for (const command of all(program)) {
    command.exitOverride().configureOutput({
      writeOut: () => undefined,
      writeErr: (text) => (printed += text),
    });
  }
  program.hook('preAction', () => {
    throw new Parsed();
  });
  try {
    await program.parseAsync(args, { from: 'user' });
    return 'parsed, but no action would run';
  } catch (error) {
    if (error instanceof Parsed) return undefined;
    // `ebsync` or a group alone prints its help (on stderr: cli/main.ts exits 2); the line
    // parses.
    const fine = ['commander.helpDisplayed', 'commander.version', 'commander.help'];
    if (error instanceof CommanderError && fine.includes(error.code)) return undefined;
    return printed.trim() || String(error);
  }
}

describe('documentation', () => {
  it('lists every setting in the README configuration table', () => {
    const rows = readme.split('\n').filter((line) => line.startsWith('| `'));
    const missing = SETTINGS.filter(
      (s) => !rows.some((row) => row.startsWith(`| \`${s.env}\``) && row.includes(`\`${s.path}\``)),
    ).map((s) => s.env);
    expect(missing).toEqual([]);
  });

  it('lists every command and subcommand of the CLI in the README command table', () => {
    const paths = commandPaths(buildProgram());
    expect(paths.map((p) => p.join(' '))).toEqual(
      expect.arrayContaining(['worker', 'connect', 'connections pause', 'connections resume']),
    );
    const table = readme.split('\n').filter((line) => line.startsWith('| `ebsync '));
    const missing = paths
      .map((p) => `ebsync ${p.join(' ')}`)
      .filter(
        (c) => !table.some((row) => row.startsWith(`| \`${c}\``) || row.startsWith(`| \`${c} `)),
      );
    expect(missing).toEqual([]);
  });

  it("says in the README's row for webhooks serve what the receiver answers, as docs/webhooks.md does", () => {
    const row = readme.split('\n').find((line) => line.startsWith('| `ebsync webhooks serve`'));
    // The 2xx waits for the store's inbox, not for Temporal (webhooks/receiver.ts).
    expect(row).toMatch(/committed to the store's inbox before the 2xx/);
    expect(row).toMatch(/with Temporal away it goes on answering 200/);
    // With the store away, the receiver's spool keeps the notice (webhooks/spooled-store.ts).
    expect(row).toMatch(/with the store away it keeps notices in its own spool .* answers 200/);
    expect(row).toMatch(
      /503 with `Retry-After` only when neither the store nor the spool can keep the notice, never because Temporal is away/,
    );
    expect(row).not.toMatch(/handed to Temporal|503 while Temporal/);
    const webhooks = readFileSync(new URL('../docs/webhooks.md', import.meta.url), 'utf8');
    expect(webhooks).toMatch(/without Temporal it goes on\s+answering 200/);
    expect(webhooks).toMatch(
      /its lock\)\s*\| `200` `\{ delivery_id \}` once the notice is committed to the receiver's spool/,
    );
    expect(webhooks).toMatch(/writable too\)\s*\| `503` `store_unavailable`, `Retry-After: 5`/);
  });

  it("says in the README's rows that --sandbox-admin takes the sandbox's admin URL", () => {
    const rows = readme
      .split('\n')
      .filter((line) => line.startsWith('| `') && line.includes('--sandbox-admin'));
    expect(rows.map((row) => row.slice(0, 60))).toEqual([
      expect.stringContaining('ebsync webhooks register'),
      expect.stringContaining('EBS_SANDBOX_ADMIN_TOKEN'),
    ]);
    for (const row of rows) {
      // A flag named bare reads as a switch; this one is given the address of the admin API.
      expect(row).not.toMatch(/`--sandbox-admin`/);
      expect(row).toContain('`--sandbox-admin <url>`');
    }
    const register = rows[0] ?? '';
    expect(register).toMatch(
      /the sandbox's admin API, such as `https:\/\/127\.0\.0\.1:4010\/admin`/,
    );
  });

  describe('every ebsync command line in README.md and docs/*.md parses with the real CLI', () => {
    const lines = DOCS.flatMap((file) =>
      docCommands(readFileSync(new URL(`../${file}`, import.meta.url), 'utf8')).map((c) => ({
        ...c,
        file,
      })),
    );

    it('finds the command lines, and the check can fail', async () => {
      // The README's quick start and command table at least.
      expect(lines.filter((l) => l.file === 'README.md').length).toBeGreaterThan(10);
      expect(lines.some((l) => l.line === 'npx ebsync connect --api-key')).toBe(true);
      expect(await parseOnly(['connect', '--no-such-flag'])).toMatch(
        /unknown option '--no-such-flag'/,
      );
      expect(await parseOnly(['frobnicate'])).toMatch(/unknown command 'frobnicate'/);
      expect(await parseOnly(['connections', 'pause'])).toMatch(/missing required argument/);
      expect(await parseOnly(['connect', '--timeout', 'abc'])).toMatch(/is invalid/);
    });

    it.for(lines.map((l) => [`${l.file}: ${l.line}`, l.args] as const))('%s', async ([, args]) => {
      expect(await parseOnly([...args])).toBeUndefined();
    });
  });

  it('the route table gives exactly the routes the spec states, and marks the rest assumed', () => {
    const stated = new Set(SPEC_ROUTES.map((r) => routeShape(r.method, r.path)));
    const given = ROUTES.filter((r) => r.source === 'given').map((r) =>
      routeShape(r.method, r.path),
    );
    expect(stated.size).toBeGreaterThan(20);
    expect([...stated].filter((r) => !given.includes(r))).toEqual([]);
    expect(given.filter((r) => !stated.has(r))).toEqual([]);
    const sandboxDoc = readFileSync(new URL('../docs/sandbox.md', import.meta.url), 'utf8');
    expect(sandboxDoc).toContain('`assumed`');
  });

  // The fixture is checked against the spec only where the spec is (CI has ../shared/ beside
  // the repository); a clone elsewhere has only the fixture, and the test above uses that.
  it.runIf(existsSync(specFile))(
    'the routes fixture says what the spec states (skipped when ../shared/spec is absent)',
    () => {
      const spec = readFileSync(specFile, 'utf8');
      const inSpec = new Set(
        [
          ...spec.matchAll(/\b(GET|POST|PUT|PATCH|DELETE)\s*(?:\|\s*)?(\/api\/v1\/[^\s|,`)]+)/g),
        ].map((m) => routeShape(m[1] ?? '', m[2] ?? '')),
      );
      const inFixture = SPEC_ROUTES.map((r) => routeShape(r.method, r.path));
      expect(new Set(inFixture).size).toBe(inFixture.length);
      expect([...inSpec].filter((r) => !inFixture.includes(r))).toEqual([]);
      expect(inFixture.filter((r) => !inSpec.has(r))).toEqual([]);
    },
  );
});
