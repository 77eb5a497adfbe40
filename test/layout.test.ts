import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layout table of DESIGN.md, as rules: which top-level folders each folder may import
 * from. A folder may always import its own files. Keeping the arrows one way is what lets a
 * newcomer change one folder without reading the others.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

type Folder =
  | 'config'
  | 'api'
  | 'workflows'
  | 'activities'
  | 'destinations'
  | 'store'
  | 'webhooks'
  | 'worker'
  | 'cli'
  | 'sandbox';

const ABOVE_WORKER: Folder[] = [
  'config',
  'api',
  'workflows',
  'activities',
  'destinations',
  'store',
  'webhooks',
];

interface Rule {
  /** Folders whose modules may be imported (values and types). */
  imports: Folder[];
  /** Folders this one may import types from only (`import type`, erased at build). */
  typesFrom?: Folder[];
}

const RULES: Record<Folder, Rule> = {
  config: { imports: [] },
  api: { imports: ['config'] },
  // Workflow code runs in Temporal's sandbox: it sees activities only as types.
  workflows: { imports: [], typesFrom: ['activities'] },
  activities: { imports: ['api', 'destinations', 'store', 'config'] },
  destinations: { imports: ['config'] },
  store: { imports: ['config'] },
  webhooks: { imports: ['config', 'api', 'store'] },
  worker: { imports: ABOVE_WORKER },
  // cli/ also starts the sandbox (`ebsync sandbox`, the demo stack of `npm start`).
  cli: { imports: [...ABOVE_WORKER, 'worker', 'sandbox'] },
  sandbox: { imports: ['api'] },
};

/**
 * The sandbox may use api/ for its "route table and schemas only" (DESIGN.md): api/routes.ts
 * and api/schemas/. Anything else in api/ (the client, auth, paging) is what the sandbox
 * stands in for, and sharing it would let a client bug hide in both.
 */
function isSandboxApiFile(target: string): boolean {
  return target === 'api/routes.ts' || target.startsWith('api/schemas/');
}

/**
 * Imports the table does not allow that the code makes today, each named exactly (the
 * importing folder and the files it imports), with the reason it stands. Not a way to silence
 * the test: a new crossing still fails, and an entry nobody uses any more fails too, so the
 * list only shrinks. Each one is a question for DESIGN.md's table.
 */
const KNOWN_CROSSINGS: { folder: Folder; targets: string[]; why: string }[] = [
  {
    folder: 'config',
    targets: ['api/routes.ts'],
    why: 'route overrides (EBSYNC_ROUTES) are checked against the route table when config loads',
  },
  {
    folder: 'activities',
    targets: [
      'workflows/connection.ts',
      'workflows/connection-types.ts',
      'workflows/mirror-types.ts',
      'workflows/rate-limit.ts',
    ],
    why:
      'the contracts of the workflows these activities serve or ask: shared types and constants ' +
      '(the rate-limit signal a refused request reports), ' +
      "and the connection workflow's update and query definitions (called by definition, never by name)",
  },
  {
    folder: 'sandbox',
    targets: ['api/questionnaire-answers.ts'],
    why: "the spec's rules for answer values, which the sandbox enforces as the client checks them",
  },
  {
    folder: 'sandbox',
    targets: ['config/loopback.ts'],
    why: "ebsync's one loopback rule, deciding when the sandbox may serve plain HTTP",
  },
];

const FOLDERS = Object.keys(RULES) as Folder[];

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

interface ImportSite {
  specifier: string;
  typeOnly: boolean;
  line: number;
}

/** Static imports and re-exports, `import()` calls and `import x = require()`. */
function importsOf(file: string, text = readFileSync(file, 'utf8')): ImportSite[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const sites: ImportSite[] = [];
  const add = (node: ts.Node, specifier: ts.Expression | undefined, typeOnly: boolean) => {
    if (specifier === undefined || !ts.isStringLiteralLike(specifier)) return;
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    sites.push({ specifier: specifier.text, typeOnly, line });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      add(node, node.moduleSpecifier, node.importClause?.isTypeOnly ?? false);
    } else if (ts.isExportDeclaration(node)) {
      add(node, node.moduleSpecifier, node.isTypeOnly);
    } else if (ts.isImportEqualsDeclaration(node)) {
      const ref = node.moduleReference;
      if (ts.isExternalModuleReference(ref)) add(node, ref.expression, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0], false);
    } else if (ts.isImportTypeNode(node)) {
      const arg = node.argument;
      if (ts.isLiteralTypeNode(arg)) add(node, arg.literal, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return sites;
}

/** The repository-relative path a relative import names, with `.js` read as the `.ts` file. */
function targetOf(file: string, specifier: string): string {
  const absolute = resolve(file, '..', specifier).replace(/\.js$/, '.ts');
  return relative(ROOT, absolute).split(sep).join('/');
}

function isKnownCrossing(folder: Folder, target: string): boolean {
  return KNOWN_CROSSINGS.some((known) => known.folder === folder && known.targets.includes(target));
}

/** Each relative import leaving a folder, as the repository-relative file it names. */
function crossingsOf(folder: Folder): { where: string; site: ImportSite; target: string }[] {
  return tsFiles(join(ROOT, folder)).flatMap((file) => {
    const from = relative(ROOT, file).split(sep).join('/');
    return importsOf(file)
      .filter((site) => site.specifier.startsWith('.'))
      .map((site) => {
        const target = targetOf(file, site.specifier);
        return {
          where: `${from}:${site.line} imports '${site.specifier}' (${target})`,
          site,
          target,
        };
      })
      .filter(({ target }) => target.split('/')[0] !== folder);
  });
}

function violationsOf(folder: Folder): string[] {
  const rule = RULES[folder];
  const found: string[] = [];
  for (const { where, site, target } of crossingsOf(folder)) {
    const targetFolder = target.split('/')[0] ?? '';
    if (isKnownCrossing(folder, target)) continue;
    if (!(FOLDERS as string[]).includes(targetFolder)) {
      found.push(`${where}: ${folder}/ may not import outside the layout's folders`);
      continue;
    }
    const allowed = rule.imports.includes(targetFolder as Folder);
    const typeAllowed = site.typeOnly && (rule.typesFrom ?? []).includes(targetFolder as Folder);
    if (!allowed && !typeAllowed) {
      const may = [
        ...rule.imports.map((f) => `${f}/`),
        ...(rule.typesFrom ?? []).map((f) => `${f}/ (import type only)`),
      ];
      found.push(
        `${where}: ${folder}/ may import only its own files${may.map((m) => `, ${m}`).join('')}`,
      );
    } else if (folder === 'sandbox' && targetFolder === 'api' && !isSandboxApiFile(target)) {
      found.push(`${where}: sandbox/ may use api/ for the route table and schemas/ only`);
    }
  }
  return found;
}

describe('DESIGN.md layout: what each folder may import', () => {
  it.each(FOLDERS)('%s/ imports only what the layout table allows', (folder) => {
    expect(tsFiles(join(ROOT, folder)).length).toBeGreaterThan(0);
    expect(violationsOf(folder)).toEqual([]);
  });

  it('lists only crossings the code still makes', () => {
    const unused = KNOWN_CROSSINGS.flatMap(({ folder, targets }) => {
      const made = new Set(crossingsOf(folder).map(({ target }) => target));
      return targets.filter((t) => !made.has(t)).map((t) => `${folder}/ -> ${t}`);
    });
    expect(unused).toEqual([]);
  });

  it('reads multi-line, re-exported and dynamic imports, and type-only ones as such', () => {
    const sample = [
      "import type { Ledger } from '../store/ledger.js';",
      'import {',
      '  openLedger,',
      "} from '../store/open-ledger.js';",
      "export { ROUTES } from '../api/routes.js';",
      "const later = () => import('../config/index.js');",
    ].join('\n');
    const sites = importsOf(join(ROOT, 'workflows', 'sample.ts'), sample);
    expect(sites.map(({ specifier, typeOnly }) => ({ specifier, typeOnly }))).toEqual([
      { specifier: '../store/ledger.js', typeOnly: true },
      { specifier: '../store/open-ledger.js', typeOnly: false },
      { specifier: '../api/routes.js', typeOnly: false },
      { specifier: '../config/index.js', typeOnly: false },
    ]);
  });
});
