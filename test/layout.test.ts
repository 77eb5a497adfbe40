import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import layout from '../layout.json' with { type: 'json' };

/**
 * The layout table of DESIGN.md, as rules: which top-level folders each folder may import
 * from. A folder may always import its own files. Keeping the arrows one way is what lets a
 * newcomer change one folder without reading the others. The table is layout.json, which
 * eslint.config.js turns into no-restricted-imports; this test also reads `import()` calls
 * and `import x = require()`, which the lint rule does not see.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Rule {
  /** Folders whose modules may be imported (values and types). */
  imports: string[];
  /** Folders this one may import types from only (`import type`, erased at build). */
  typesFrom?: string[];
  /** Single files or `dir/**` globs of other folders this one may import. */
  files?: string[];
  why?: string;
}

const RULES: Record<string, Rule> = layout.folders;

/**
 * Imports the table does not allow that the code makes, each named exactly (the importing
 * folder and the files it imports), with the reason it stands. Not a way to silence the test:
 * a new crossing still fails, and an entry nobody uses any more fails too, so the list only
 * shrinks.
 */
const KNOWN_CROSSINGS: { folder: string; targets: string[]; why: string }[] = layout.crossings;

/** `workflows/*-types.ts`, `api/schemas/**` as a test on a repository-relative path. */
function matchesFile(pattern: string, target: string): boolean {
  const source = pattern
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*'),
    )
    .join('.*');
  return new RegExp(`^${source}$`).test(target);
}

/** The table's folders that exist yet (records/ has a row before it has files). */
const FOLDERS = Object.keys(RULES).filter((folder) => existsSync(join(ROOT, folder)));

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

function isKnownCrossing(folder: string, target: string): boolean {
  return KNOWN_CROSSINGS.some((known) => known.folder === folder && known.targets.includes(target));
}

/** Each relative import leaving a folder, as the repository-relative file it names. */
function crossingsOf(folder: string): { where: string; site: ImportSite; target: string }[] {
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

function violationsOf(folder: string): string[] {
  const rule = RULES[folder] ?? { imports: [] };
  const found: string[] = [];
  for (const { where, site, target } of crossingsOf(folder)) {
    const targetFolder = target.split('/')[0] ?? '';
    if (isKnownCrossing(folder, target)) continue;
    if ((rule.files ?? []).some((pattern) => matchesFile(pattern, target))) continue;
    if (!(targetFolder in RULES)) {
      found.push(`${where}: ${folder}/ may not import outside the layout's folders`);
      continue;
    }
    const allowed = rule.imports.includes(targetFolder);
    const typeAllowed = site.typeOnly && (rule.typesFrom ?? []).includes(targetFolder);
    if (!allowed && !typeAllowed) {
      const may = [
        ...rule.imports.map((f) => `${f}/`),
        ...(rule.typesFrom ?? []).map((f) => `${f}/ (import type only)`),
        ...(rule.files ?? []),
      ];
      found.push(
        `${where}: ${folder}/ may import only its own files${may.map((m) => `, ${m}`).join('')}`,
      );
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

  it("reads the table's file globs as the lint rule does", () => {
    expect(matchesFile('workflows/*-types.ts', 'workflows/connection-types.ts')).toBe(true);
    expect(matchesFile('workflows/*-types.ts', 'workflows/connection.ts')).toBe(false);
    expect(matchesFile('api/schemas/**', 'api/schemas/leads.ts')).toBe(true);
    expect(matchesFile('api/schemas/**', 'api/routes.ts')).toBe(false);
    expect(RULES['records']?.imports).toEqual(['config']);
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
