import { existsSync, readFileSync } from 'node:fs';

/** The package version; package.json sits one level up from source, two from dist. */
function readVersion(): string {
  for (const rel of ['../package.json', '../../package.json']) {
    const url = new URL(rel, import.meta.url);
    if (existsSync(url)) {
      const pkg = JSON.parse(readFileSync(url, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'ebsync' && pkg.version) return pkg.version;
    }
  }
  return '0.0.0';
}

export const VERSION: string = readVersion();
