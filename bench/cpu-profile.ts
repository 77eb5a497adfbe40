import { readFileSync } from 'node:fs';
import { ROOT } from './lib.js';

/**
 * Where a process's CPU went, from the `.cpuprofile` V8 writes under `--cpu-prof`: self time
 * summed by file (packages by name, the repository's files by path) and by function, idle
 * time left out. The mirror benchmark puts the largest of each in RESULTS.md.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Milliseconds sampled outside idle. */
  busyMs: number;
  byFile: [string, number][];
  byFunction: [string, number][];
}

/** A frame's place: a package by its name, a file of the repository by its path. */
function placeOf(url: string, functionName: string): string {
  if (url === '') return `(${functionName || 'native'})`;
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [first, second] = url.slice(modules + '/node_modules/'.length).split('/');
    return first?.startsWith('@') ? `${first}/${second}` : (first ?? url);
  }
  const root = `file://${ROOT}`;
  return url.startsWith(root) ? url.slice(root.length) : url;
}

export function summarizeProfile(file: string, top = 12): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busyUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (!frame || frame.functionName === '(idle)') continue;
    busyUs += us;
    const place = placeOf(frame.url, frame.functionName);
    byFile.set(place, (byFile.get(place) ?? 0) + us);
    const fn = frame.url
      ? `${frame.functionName || '(anonymous)'} ${place}:${frame.lineNumber + 1}`
      : place;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  }
  const largest = (m: Map<string, number>): [string, number][] =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => [k, us / 1000]);
  return { busyMs: busyUs / 1000, byFile: largest(byFile), byFunction: largest(byFunction) };
}
