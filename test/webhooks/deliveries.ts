import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Webhook } from 'standardwebhooks';
import { sandboxMirrorDeps } from '../fixtures/sandbox-mirror-deps.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';

/** Signed deliveries as a sender would make them, and what the test reads back. */
export const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

export interface Sent {
  status: number;
  body: Record<string, unknown> | undefined;
  headers: Headers;
}

/** A hint body as the sandbox sends it. */
export function hintBody(id: string, recordType: string, recordId: string | number): string {
  return JSON.stringify({
    id,
    type: `${recordType}.updated`,
    occurred_at: new Date().toISOString(),
    business_id: 1,
    data: { record_type: recordType, id: String(recordId), action: 'updated' },
  });
}

/** Standard Webhooks headers for `body`, signed with `secret` at `at`. */
export function standardHeaders(
  secret: string,
  id: string,
  body: string,
  at = new Date(),
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

export async function post(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<Sent> {
  const response = await fetch(url, { method: 'POST', body, headers });
  const text = await response.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: response.status, body: json, headers: response.headers };
}

/** Runs `fn` over `items`, `lanes` at a time. */
export async function inLanes<T>(
  items: readonly T[],
  lanes: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < items.length) {
        const i = next;
        next += 1;
        await fn(items[i]!, i);
      }
    }),
  );
}

/** A column of the mirror's rows by id (live rows only). */
export function destinationColumn(
  file: string,
  table: string,
  column: string,
): Map<string, unknown> {
  if (!existsSync(file)) return new Map();
  const db = new Database(file, { readonly: true });
  try {
    const exists = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
      .get(table);
    if (!exists) return new Map();
    const rows = db
      .prepare(`SELECT id, ${column} AS value FROM ${table} WHERE deleted_at IS NULL`)
      .all() as { id: string; value: unknown }[];
    return new Map(rows.map((r) => [String(r.id), r.value]));
  } finally {
    db.close();
  }
}

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** What the record activities need: the sandbox by its key, a ledger in `dir`. */
export function recordDeps(ts: TestSandbox, dir: string): ReturnType<typeof sandboxMirrorDeps> {
  return sandboxMirrorDeps({
    baseUrl: ts.sb.baseUrl,
    apiKey: ts.sb.apiKey,
    ca: readFileSync(ts.sb.caFile ?? ''),
    ledger: `sqlite:${join(dir, 'store.db')}`,
    reachLimit: 10_000,
    per: 100,
  });
}

/** What a record-workflow test file stands on: an HTTPS sandbox, Temporal, a scratch directory. */
export interface RecordBed {
  ts: TestSandbox;
  temporal: TemporalHarness;
  dir: string;
  deps: ReturnType<typeof recordDeps>;
}

export async function openRecordBed(
  seed: { leads: number; events: number },
  dirPrefix: string,
): Promise<RecordBed> {
  const ts = await startTestSandbox({ https: true, seed });
  const temporal = await connectTemporal();
  const dir = mkdtempSync(join(tmpdir(), dirPrefix));
  return { ts, temporal, dir, deps: recordDeps(ts, dir) };
}

/** Closes what openRecordBed opened; a bed that never opened is nothing to close. */
export async function closeRecordBed(bed: RecordBed | undefined): Promise<void> {
  if (!bed) return;
  await bed.deps.close();
  await bed.temporal.close();
  await bed.ts.close();
  rmSync(bed.dir, { recursive: true, force: true });
}
