import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { exitCodeOf, summaryText } from '../../cli/mirror-summary.js';
import { apiKeyAuth, createClient } from '../../api/index.js';
import type { MirrorDeps } from '../../activities/mirror/pass.js';
import type { Destination } from '../../destinations/destination.js';
import { openDestination, type CrmSettings } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import type { Ledger } from '../../store/ledger.js';
import { openLedger } from '../../store/open-ledger.js';
import type { CrmFake, CrmFakeOptions } from '../../sandbox/crm/fakes.js';
import type { Sandbox } from '../../sandbox/server.js';
import type { MirrorInput, MirrorSummary } from '../../workflows/mirror-types.js';
import { runMirrorPass } from '../helpers/mirror-pass.js';
import { sourceIds } from '../mirror/source-truth.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';

export const LEADS = 2000;
export const EVENTS = 300;
const REACH = 10_000;

/** What a CRM destination's test file shares: the sandbox, its fakes, and mirror passes into them. */
export interface CrmMirror<F extends CrmFake> {
  readonly sb: Sandbox;
  /** A scratch folder removed after the file's tests. */
  readonly dir: string;
  /** A fresh fake with nothing in it, closed after the file's tests. */
  newFake(): Promise<F>;
  /** Mirror deps whose destination is this fake, with a ledger of their own. */
  depsFor(fake: F): MirrorDeps;
  /** One pass of this file's connection into the fake the deps name, to its end. */
  runPass(
    deps: MirrorDeps,
    input: Omit<MirrorInput, 'connectionId' | 'destination'>,
  ): Promise<MirrorSummary>;
  /** The message of the failure of a pass that should fail (undefined if it ended well). */
  failureOf(
    deps: MirrorDeps,
    input: Omit<MirrorInput, 'connectionId' | 'destination'>,
  ): Promise<string | undefined>;
  /** Closes a destination a test opened itself along with the rest. */
  closeLater(destination: Destination): void;
  /** The sandbox's event statuses, by event id. */
  eventStatuses(): Map<string, string>;
  /** Event id → its key in a stage map: `canceled`/`completed` when that boolean is true, else its status. */
  eventStageKeys(): Map<string, string>;
  /** The sandbox's live leads' emails, lower-cased, without the leads that have none. */
  leadEmails(): Set<string>;
  /** One lead's email as the sandbox holds it. */
  leadEmail(leadId: string | undefined): string | null;
  /** Live events none of whose customers has an email with an `@`: no contact for them. */
  eventsWithoutEmail(): number;
  /** The ids of the live events that some customer's email with an `@` links a contact to. */
  eventsWithEmail(): Set<string>;
  /**
   * Checks that the file's first pass counted its events without a customer email, then gives
   * two leads an email that is no address and none, and checks that an incremental pass writes
   * them, counts and says them, and stays complete.
   */
  expectWithoutEmailCounted(first: MirrorSummary, deps: MirrorDeps): Promise<void>;
}

/**
 * Registers the file's beforeAll and afterAll: a sandbox of 2,000 leads and 300 events, the
 * shared dev server, and a connection named after the CRM that no other test file uses.
 */
export function useCrmMirror<F extends CrmFake>(
  crm: F['name'],
  startFake: (options: CrmFakeOptions) => Promise<F>,
  settingsOf: (fake: F) => CrmSettings,
): CrmMirror<F> {
  const connection = `crm-${crm}`;
  let ts: TestSandbox | undefined;
  let temporal: TemporalHarness | undefined;
  let dir: string | undefined;
  const fakes: F[] = [];
  const ledgers: Ledger[] = [];
  const destinations: Destination[] = [];
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined)
      throw new Error('the CRM mirror harness is used before its beforeAll ran');
    return value;
  };
  const sandbox = (): Sandbox => ready(ts).sb;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `ebsync-${connection}-`));
    ts = await startTestSandbox({ reachLimit: REACH, seed: { leads: LEADS, events: EVENTS } });
    temporal = await connectTemporal();
  }, 240_000);

  afterAll(async () => {
    for (const d of destinations) await d.close();
    for (const l of ledgers) await l.close();
    for (const f of fakes) await f.close();
    await temporal?.close();
    await ts?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  return {
    get sb() {
      return sandbox();
    },
    get dir() {
      return ready(dir);
    },
    async newFake() {
      const fake = await startFake({ adminToken: 'admin-token-for-tests' });
      fakes.push(fake);
      return fake;
    },
    depsFor(fake) {
      let ledger: Promise<Ledger> | undefined;
      let destination: Destination | undefined;
      return {
        clientFor: () =>
          Promise.resolve(
            createClient({
              baseUrl: sandbox().baseUrl,
              auth: apiKeyAuth(sandbox().apiKey),
              allowInsecureLoopback: true,
            }),
          ),
        ledger: () =>
          (ledger ??= openLedger(
            `sqlite:${join(dir ?? '', `ledger-${ledgers.length}-${Math.random()}.db`)}`,
          ).then((l) => {
            ledgers.push(l);
            return l;
          })),
        destination: (target) => {
          if (!destination) {
            destination = openDestination(databaseOpeners, target, settingsOf(fake));
            destinations.push(destination);
          }
          return Promise.resolve(destination);
        },
        reachLimit: REACH,
        per: 100,
      };
    },
    runPass(deps, input) {
      return runMirrorPass(
        ready(temporal),
        deps,
        { connectionId: connection, destination: crm, ...input },
        `mirror-${connection}`,
      );
    },
    failureOf(deps, input) {
      return this.runPass(deps, input).then(
        () => undefined,
        // The workflow's failure wraps the activity's, which says what went wrong.
        (error: Error) => String((error.cause as Error | undefined)?.message),
      );
    },
    closeLater(destination) {
      destinations.push(destination);
    },
    eventStatuses() {
      const sb = sandbox();
      const rows = sb.ctx.db
        .prepare(
          `SELECT id, json_extract(attrs, '$.status') AS status FROM records WHERE type = 'event' AND business_id = ?`,
        )
        .all(sb.businessId) as { id: number; status: string }[];
      return new Map(rows.map((r) => [String(r.id), r.status]));
    },
    eventStageKeys() {
      const sb = sandbox();
      const rows = sb.ctx.db
        .prepare(
          `SELECT id, json_extract(attrs, '$.status') AS status, json_extract(attrs, '$.canceled') AS canceled, json_extract(attrs, '$.completed') AS completed FROM records WHERE type = 'event' AND business_id = ?`,
        )
        .all(sb.businessId) as {
        id: number;
        status: string;
        canceled: number;
        completed: number;
      }[];
      const key = (r: (typeof rows)[number]) =>
        r.canceled ? 'canceled' : r.completed ? 'completed' : r.status;
      return new Map(rows.map((r) => [String(r.id), key(r)]));
    },
    leadEmails() {
      const sb = sandbox();
      const rows = sb.ctx.db
        .prepare(
          `SELECT json_extract(attrs, '$.email') AS email FROM records WHERE type = 'lead' AND business_id = ? AND deleted_at IS NULL`,
        )
        .all(sb.businessId) as { email: string | null }[];
      return new Set(rows.flatMap((r) => (r.email ? [r.email.toLowerCase()] : [])));
    },
    leadEmail(leadId) {
      const row = sandbox()
        .ctx.db.prepare(
          `SELECT json_extract(attrs, '$.email') AS email FROM records WHERE type = 'lead' AND id = ?`,
        )
        .get(Number(leadId)) as { email: string | null } | undefined;
      return row?.email ?? null;
    },
    eventsWithoutEmail() {
      return sourceIds(sandbox(), 'event').size - this.eventsWithEmail().size;
    },
    eventsWithEmail() {
      // An event's customer emails are those of its live customers (event_user records).
      return sourceIds(
        sandbox(),
        'event',
        `AND EXISTS (SELECT 1 FROM records u WHERE u.type = 'event_user' AND u.parent_id = records.id AND u.deleted_at IS NULL AND json_extract(u.attrs, '$.email') LIKE '%@%')`,
      );
    },
    async expectWithoutEmailCounted(first, deps) {
      // No lead of the sandbox lacks an email: what the first pass counted is events.
      expect(first.counts.withoutEmail ?? 0).toBe(this.eventsWithoutEmail());
      const sb = sandbox();
      const ids = sb.ctx.db
        .prepare(
          `SELECT id FROM records WHERE type = 'lead' AND business_id = ? AND deleted_at IS NULL ORDER BY id LIMIT 2 OFFSET ?`,
        )
        .all(sb.businessId, 300) as { id: number }[];
      const [junk, none] = ids.map((r) => r.id);
      if (junk === undefined || none === undefined) throw new Error('too few leads to edit');
      sb.admin.patchRecord('lead', junk, { email: 'n/a' });
      sb.admin.patchRecord('lead', none, { email: null });
      const pass = await this.runPass(deps, { subjects: ['leads'], mode: 'incremental' });
      expect(pass.phase).toBe('done');
      expect(exitCodeOf(pass)).toBe(0);
      expect(pass.counts.written).toBe(2);
      expect(pass.counts.withoutEmail).toBe(2);
      expect(summaryText(pass)).toContain(
        '  no email     2 records written without an email address or a contact (empty, or text that is no address)',
      );
      // Written again, every one of them (--rewrite), they are counted again.
      const again = await this.runPass(deps, {
        subjects: ['leads', 'events'],
        mode: 'full',
        rewrite: true,
      });
      expect(again.phase).toBe('done');
      expect(again.counts.withoutEmail).toBe(this.eventsWithoutEmail() + 2);
    },
  };
}
