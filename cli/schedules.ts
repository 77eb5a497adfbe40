import { jsonText, printable, report, shownSafely } from './shown-text.js';
import { refuseOtherWriter } from './destination-writer.js';
import { durationText } from '../config/duration.js';
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  ServiceError,
  type Client,
  type ScheduleDescription,
  type ScheduleHandle,
} from '@temporalio/client';
import { type Config } from '../config/index.js';
import { loadStartupConfig } from './startup-config.js';
import { maskCredentials } from '../config/database-locations.js';
import { connectClient } from '../worker/temporal-client.js';
import type { MirrorSubject } from '../workflows/mirror-types.js';
import { scheduledMirrorWorkflow } from '../workflows/scheduled-mirror.js';
import { runAction, sealedOtherwiseError, UserError } from './errors.js';
import {
  listMirrorSchedules,
  viewOf,
  type ScheduleMemo,
  type ScheduleView,
} from './schedule-views.js';
import {
  cronProblem,
  cronShortestGapMs,
  localTimezone,
  temporalCronExpressions,
  timezoneProblem,
} from './schedule-cron.js';
import { requireWorker, requireWorkerOf } from './worker-check.js';
import { connectionWorkflowId } from '../workflows/connection-types.js';
import {
  requireConnection,
  checkDestination,
  defaultDestination,
  destinationKey,
  mirrorRun,
  normalizeDestination,
  parseSubjects,
  pickConnection,
  reauthNeeded,
} from './sync.js';

/** What `ebsync schedule` does to one schedule by its id. */
export type ScheduleVerb = 'pause' | 'resume' | 'trigger' | 'delete';

/** When a schedule fires: a fixed interval, or a cron expression in a time zone. */
export type ScheduleTiming = { everyMs: number } | { cron: string; timezone: string };

export interface MirrorScheduleRequest {
  connectionId: string;
  /** `leads`, `events`, `appointments` or `all`: also a part of the schedule's id. */
  what: string;
  /** Normalized (`sqlite:` absolute, or `postgres://…`). */
  destination: string;
  full: boolean;
  timing: ScheduleTiming;
  catchupWindowMs: number;
  jitterMs: number;
  paused?: boolean;
}

/**
 * `sync-<connection>-<what>-<mode>`, plus the destination's key when it is not the default
 * mirror file: the same request always names the same schedule, so a second create finds it.
 */
export function mirrorScheduleId(
  config: Config,
  request: Pick<MirrorScheduleRequest, 'connectionId' | 'what' | 'destination' | 'full'>,
): string {
  const mode = request.full ? 'full' : 'incremental';
  const base = `sync-${request.connectionId}-${request.what}-${mode}`;
  return request.destination === defaultDestination(config)
    ? base
    : `${base}-${destinationKey(request.destination)}`;
}

function whenText(timing: ScheduleTiming): string {
  return 'everyMs' in timing
    ? `every ${durationText(timing.everyMs)}`
    : `cron '${timing.cron}' (${timing.timezone})`;
}

/**
 * Creates the schedule of a mirror. Full passes skip a firing while the last one runs (a
 * second full pass right after adds nothing); incremental ones buffer one, so changes made
 * during a long pass are picked up right after it. Throws ScheduleAlreadyRunning when the id
 * exists.
 */
export async function createMirrorSchedule(
  client: Client,
  config: Config,
  request: MirrorScheduleRequest,
): Promise<ScheduleHandle> {
  const scheduleId = mirrorScheduleId(config, request);
  const subjects: MirrorSubject[] = parseSubjects(request.what);
  const { workflowId, input } = mirrorRun(request.connectionId, {
    subjects,
    destination: request.destination,
    full: request.full,
  });
  const memo: ScheduleMemo = {
    ebsync: 'mirror',
    connectionId: request.connectionId,
    what: request.what,
    mode: input.mode,
    destination: maskCredentials(request.destination),
    when: whenText(request.timing),
  };
  const jitter = request.jitterMs > 0 ? { jitter: request.jitterMs } : {};
  try {
    return await client.schedule.create({
      scheduleId,
      spec:
        'everyMs' in request.timing
          ? { intervals: [{ every: request.timing.everyMs }], ...jitter }
          : {
              cronExpressions: temporalCronExpressions(request.timing.cron),
              timezone: request.timing.timezone,
              ...jitter,
            },
      action: {
        type: 'startWorkflow',
        workflowType: scheduledMirrorWorkflow,
        args: [{ mirror: input, mirrorWorkflowId: workflowId }],
        taskQueue: config.temporal.taskQueue,
        // Temporal appends the firing time, so no action id equals the mirror's own id.
        workflowId: scheduleId,
      },
      policies: {
        overlap: request.full ? ScheduleOverlapPolicy.SKIP : ScheduleOverlapPolicy.BUFFER_ONE,
        catchupWindow: request.catchupWindowMs,
      },
      memo: { ...memo },
      state: { paused: request.paused === true },
    });
  } catch (error) {
    // The SDK turns the server's "Invalid schedule spec" (a cron expression it cannot read)
    // into a TypeError; other refusals of the spec come as gRPC INVALID_ARGUMENT.
    const cause =
      error instanceof ServiceError
        ? (error.cause as { code?: number; details?: string } | undefined)
        : undefined;
    if (error instanceof TypeError || cause?.code === 3) {
      const why = cause?.details ?? (error as Error).message;
      throw new UserError(`the server refused this schedule: ${why}`, 2);
    }
    throw error;
  }
}

export interface DefaultScheduleOutcome {
  scheduleId: string;
  when: string;
  created: boolean;
  /** One kept as it was and paused (by its user): its passes do not run until resumed. */
  paused?: boolean;
  /** Why one made now fires in UTC instead of this machine's zone. */
  inUtcBecause?: string;
}

/**
 * The demo's defaults (incremental every 15 minutes, a full reconcile nightly at 03:00 local
 * time), each created only when its id does not exist: a schedule a user changed stays as is.
 */
export async function ensureDefaultSchedules(
  client: Client,
  config: Config,
  connectionId: string,
  destination: string,
): Promise<DefaultScheduleOutcome[]> {
  // The demo starts all the same on a machine whose zone Temporal cannot read: its nightly
  // pass then runs at 03:00 UTC, and the summary says why.
  const local = localTimezone();
  const defaults: MirrorScheduleRequest[] = [
    {
      connectionId,
      what: 'all',
      destination,
      full: false,
      timing: { everyMs: 15 * 60_000 },
      catchupWindowMs: 15 * 60_000,
      jitterMs: 30_000,
    },
    {
      connectionId,
      what: 'all',
      destination,
      full: true,
      timing: { cron: '0 3 * * *', timezone: 'zone' in local ? local.zone : 'UTC' },
      catchupWindowMs: 6 * 3_600_000,
      jitterMs: 5 * 60_000,
    },
  ];
  const outcomes: DefaultScheduleOutcome[] = [];
  for (const request of defaults) {
    const scheduleId = mirrorScheduleId(config, request);
    const when = whenText(request.timing);
    try {
      await createMirrorSchedule(client, config, request);
      const utc = 'cron' in request.timing && 'problem' in local;
      outcomes.push({
        scheduleId,
        when,
        created: true,
        ...(utc ? { inUtcBecause: local.short } : {}),
      });
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw error;
      // Kept as it is, but a paused one mirrors nothing: the summary has to say so, or the
      // demo looks kept in step when it is not.
      const { state } = await client.schedule.getHandle(scheduleId).describe();
      outcomes.push({ scheduleId, when, created: false, paused: state.paused });
    }
  }
  return outcomes;
}

/** The main job's summary lines about its default schedules. */
export function scheduleLines(outcomes: readonly DefaultScheduleOutcome[]): string {
  if (outcomes.length === 0) return '';
  const lines = outcomes.map((o) => {
    const kept = o.paused
      ? ` (already there, kept; paused: 'npx ebsync schedule resume ${o.scheduleId}' resumes it)`
      : ' (already there, kept)';
    const made = o.inUtcBecause ? ` (created now, in UTC: ${o.inUtcBecause})` : ' (created now)';
    return `  ${o.scheduleId}  ${o.when}${o.created ? made : kept}`;
  });
  return `Scheduled syncs ('npx ebsync schedule list'):\n${lines.join('\n')}\n`;
}

/** This machine's zone, or the one line that says why a cron cannot take it. */
function machineTimezone(): string {
  const local = localTimezone();
  if ('problem' in local) throw new UserError(local.problem, 2);
  return local.zone;
}

function checkTimezone(zone: string): string {
  const why = timezoneProblem(zone);
  if (why !== undefined) throw new UserError(why, 2);
  return zone;
}

function describeText(v: ScheduleView): string {
  const lines = [
    `${v.scheduleId}: ${v.paused ? 'paused' : 'active'}${v.note ? ` (${v.note})` : ''}`,
    `  mirrors      ${v.what ?? '?'} (${v.mode ?? '?'}) of connection ${v.connectionId ?? '?'} into ${v.destination ?? '?'}`,
    `  when         ${v.when ?? '?'}; jitter ${durationText(v.jitterMs)}; catch-up window ${durationText(v.catchupWindowMs)}`,
    `  overlap      ${v.overlap}`,
    `  next runs    ${v.paused ? '(paused)' : v.nextRuns.slice(0, 3).join(', ') || '(none)'}`,
    `  runs         ${v.actionsTaken} started, ${v.skippedOverlap} skipped (overlap), ${v.missedCatchupWindow} missed (catch-up window)`,
  ];
  for (const id of v.running) lines.push(`  running      ${id}`);
  for (const run of v.recentRuns.slice(-5)) {
    lines.push(`  recent       ${run.takenAt} ${run.workflowId}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The form of the ids mirrorScheduleId gives (connection names and destination keys are
 * lowercase letters, digits, - and _; a list of record types has commas): another id names
 * none of ebsync's schedules, and is said to be bad input before Temporal is asked.
 */
const SCHEDULE_ID = /^sync-[a-z0-9][a-z0-9,_-]{0,200}$/;

/** What an id of ebsync's schedules looks like, in words: the CLI and the status page say it. */
export const SCHEDULE_ID_RULE =
  "ebsync's are sync-<connection>-<what>-<mode>[-<destination key>]: after 'sync-', lowercase letters, digits, '-', '_' and ',' (the first a letter or digit)";

export const isScheduleId = (id: string): boolean => SCHEDULE_ID.test(id);

function checkScheduleId(id: string): void {
  if (isScheduleId(id)) return;
  throw new UserError(
    `schedule id '${id}' is not allowed: ${SCHEDULE_ID_RULE}; 'ebsync schedule list' shows the ones there are`,
    2,
  );
}

async function describeOrExplain(handle: ScheduleHandle): Promise<ScheduleDescription> {
  try {
    return await handle.describe();
  } catch (error) {
    if (error instanceof ScheduleNotFoundError) {
      throw new UserError(
        `no schedule '${handle.scheduleId}': 'ebsync schedule list' shows the ones there are`,
      );
    }
    throw error;
  }
}

/**
 * Temporal refuses a pause or resume note over 1,000 bytes (its frontend's
 * ScheduleNotesSizeLimit, counted in UTF-8 bytes), and the SDK reports that only as "Failed
 * to patch schedule": the length is checked here, before Temporal is asked.
 */
export const SCHEDULE_NOTE_MAX_BYTES = 1000;

/** Why a note Temporal would refuse cannot be sent, in one line, or undefined. */
export function noteProblem(note: string): string | undefined {
  const bytes = Buffer.byteLength(note, 'utf8');
  if (bytes <= SCHEDULE_NOTE_MAX_BYTES) return undefined;
  const size =
    bytes === note.length ? `${bytes} characters` : `${note.length} characters (${bytes} bytes)`;
  return `--note is ${size}: Temporal keeps a schedule's note of ${SCHEDULE_NOTE_MAX_BYTES} bytes at most (1,000 characters of plain ASCII); shorten it`;
}

/**
 * Pause, resume and trigger, shared by `ebsync schedule` and the status page's actions.
 *
 * Temporal takes a pause of a paused schedule as a new note: a second pause without one of
 * its own would put the default note over the reason its first pause gave, and say 'paused'
 * as if it had done something. So a paused schedule keeps its note unless `note` (one the
 * user wrote) replaces it, and the line says it was paused already.
 */
export async function pauseSchedule(
  handle: ScheduleHandle,
  d: ScheduleDescription,
  note: string | undefined,
  defaultNote: string,
): Promise<string> {
  if (d.state.paused) {
    if (note === undefined || note === d.state.note) {
      return `already paused: ${handle.scheduleId}; nothing changed`;
    }
    await handle.pause(note);
    return `already paused: ${handle.scheduleId}; its note replaced`;
  }
  await handle.pause(note ?? defaultNote);
  return `paused ${handle.scheduleId}`;
}

/**
 * A schedule whose spec no date matches (a cron such as '0 3 31 2 *', made before `create`
 * refused those paused, or changed outside ebsync): resumed, it would be active and never run.
 */
export class ScheduleNeverFiresError extends Error {
  override readonly name = 'ScheduleNeverFiresError';
  /** The spec has to change first: asked again as it stands, the answer is the same. */
  readonly retryable = false;
  constructor(
    readonly scheduleId: string,
    paused: boolean,
  ) {
    const state = paused ? 'not resumed (it stays paused)' : 'it was active already';
    super(
      `${scheduleId} would never fire: Temporal finds no date its spec matches; ${state}: 'ebsync schedule delete ${scheduleId}' removes it`,
    );
  }
}

/**
 * Refused, before anything changes, when the schedule has no next time: Temporal computes a
 * paused schedule's next times as an active one's, so its description says it before the
 * unpause, and the schedule is left as it was instead of resumed into one that never runs.
 */
export async function resumeSchedule(
  handle: ScheduleHandle,
  d: ScheduleDescription,
  note: string,
): Promise<string> {
  if (d.info.nextActionTimes.length === 0) {
    throw new ScheduleNeverFiresError(handle.scheduleId, d.state.paused);
  }
  // Unpausing an active schedule would only put the resume note over its own: 'resumed'
  // would tell its user something happened.
  if (!d.state.paused) return `not paused: ${handle.scheduleId}; nothing to resume`;
  await handle.unpause(note);
  return `resumed ${handle.scheduleId}`;
}

export async function triggerSchedule(
  handle: ScheduleHandle,
  d: ScheduleDescription,
): Promise<string> {
  await handle.trigger(d.policies.overlap);
  return `triggered ${handle.scheduleId} (overlap ${d.policies.overlap}: a run going on may make this one skip or wait)`;
}

export interface CreateFlags {
  every?: number;
  cron?: string;
  timezone?: string;
  full?: boolean;
  to?: string;
  connection?: string;
  catchupWindow: number;
  jitter: number;
  paused?: boolean;
  /** False with --no-check-destination: the database is not opened from here first. */
  checkDestination?: boolean;
}

async function withClient(action: (client: Client, config: Config) => Promise<void>) {
  const config = loadStartupConfig();
  const { client, close } = await connectClient(config);
  try {
    await action(client, config);
  } finally {
    await close();
  }
}

/** `ebsync schedule pause|resume|trigger|delete <id>`: each one line out. */
const ID_ACTIONS: Record<
  ScheduleVerb,
  (handle: ScheduleHandle, d: ScheduleDescription, note?: string) => Promise<string>
> = {
  pause: (handle, d, note) => pauseSchedule(handle, d, note, 'paused with ebsync schedule pause'),
  resume: async (handle, d, note) => {
    try {
      return await resumeSchedule(handle, d, note ?? 'resumed with ebsync schedule resume');
    } catch (error) {
      // Not bad input: the schedule's own spec is what cannot run.
      if (error instanceof ScheduleNeverFiresError) throw new UserError(error.message, 1);
      throw error;
    }
  },
  trigger: triggerSchedule,
  delete: async (handle) => {
    await handle.delete();
    return `deleted ${handle.scheduleId}`;
  },
};

/** `ebsync schedule <verb> <id>`: one handle, a described check that it exists, one line out. */
export function scheduleIdCommand(
  verb: ScheduleVerb,
  id: string,
  flags: { note?: string },
): Promise<void> {
  return runAction(() => {
    // Before Temporal is asked: it would refuse the note only after the schedule was found.
    const tooLong = flags.note === undefined ? undefined : noteProblem(flags.note);
    if (tooLong !== undefined) throw new UserError(tooLong, 2);
    checkScheduleId(id);
    return withClient(async (client) => {
      const handle = client.schedule.getHandle(id);
      const description = await describeOrExplain(handle);
      process.stdout.write(
        `${printable(await ID_ACTIONS[verb](handle, description, flags.note))}\n`,
      );
    });
  });
}

/** `ebsync schedule create [what]`. */
export function scheduleCreateCommand(what: string, flags: CreateFlags): Promise<void> {
  return runAction(async () => {
    // Everything the command line alone can get wrong is said before Temporal is asked.
    parseSubjects(what);
    if (flags.every === undefined && flags.cron === undefined) {
      throw new UserError('say when: --every <duration> or --cron <expression>', 2);
    }
    if (flags.timezone !== undefined && flags.cron === undefined) {
      throw new UserError('--timezone goes with --cron only', 2);
    }
    const cron = flags.cron === undefined ? undefined : cronProblem(flags.cron);
    if (cron !== undefined) throw new UserError(cron, 2);
    // Temporal keeps a firing's delay inside its interval without a word: the schedule would
    // then show a jitter it never applies.
    if (flags.every !== undefined && flags.jitter >= flags.every) {
      throw new UserError(
        `--jitter ${durationText(flags.jitter)} is not shorter than --every ${durationText(flags.every)}: each firing's delay must stay inside the interval; give a shorter --jitter`,
        2,
      );
    }
    // A cron's firings are not evenly spaced: its shortest gap is the interval that counts.
    const gap = flags.cron === undefined ? undefined : cronShortestGapMs(flags.cron);
    if (flags.cron !== undefined && gap !== undefined && flags.jitter >= gap) {
      throw new UserError(
        `--jitter ${durationText(flags.jitter)} is not shorter than the shortest gap between firings of --cron '${shownSafely(flags.cron.trim())}', ${durationText(gap)}: each firing's delay must stay shorter than that gap; give a shorter --jitter`,
        2,
      );
    }
    const timing: ScheduleTiming =
      flags.every !== undefined
        ? { everyMs: flags.every }
        : {
            // As read: a newline or doubled space kept in the stored expression split
            // `schedule list` and `describe` across lines.
            cron: (flags.cron ?? '').trim().split(/\s+/).join(' '),
            timezone: checkTimezone(flags.timezone ?? machineTimezone()),
          };
    await withClient(async (client, config) => {
      const destination = normalizeDestination(flags.to ?? defaultDestination(config));
      if (flags.connection === undefined) await requireWorker(client, config);
      const connectionId = await pickConnection(client, config, flags.connection);
      // A schedule of a connection that does not exist would only ever fail: refused, exit 1,
      // as `ebsync sync` refuses it (a name no connection could have is exit 2).
      await requireConnection(client, connectionId);
      // As `ebsync sync` checks it: a schedule whose every pass would retry a destination that
      // cannot be opened is no schedule.
      if (flags.checkDestination !== false) {
        await checkDestination(destination, 'no schedule was created');
        await refuseOtherWriter(config, connectionId, destination, 'no schedule was created');
      }
      const request: MirrorScheduleRequest = {
        connectionId,
        what,
        destination,
        full: flags.full === true,
        timing,
        catchupWindowMs: flags.catchupWindow,
        jitterMs: flags.jitter,
        ...(flags.paused ? { paused: true } : {}),
      };
      let handle;
      try {
        handle = await createMirrorSchedule(client, config, request);
      } catch (error) {
        if (error instanceof ScheduleAlreadyRunning) {
          throw new UserError(
            `schedule '${error.scheduleId}' exists: 'ebsync schedule delete ${error.scheduleId}' first to replace it`,
          );
        }
        throw error;
      }
      // A cron no date matches ('0 3 31 2 *') is taken by the server and never fires: nothing
      // silent, so it is said and the schedule removed. Temporal's next times are the judge.
      // It computes them for a paused schedule too (the times it would fire at once resumed),
      // so --paused is checked alike, and the check never risks a firing.
      if ('cron' in timing) {
        const next = (await handle.describe()).info.nextActionTimes;
        if (next.length === 0) {
          await handle.delete();
          throw new UserError(
            `--cron '${timing.cron}' never fires (no date matches it in ${timing.timezone}); no schedule was created`,
            2,
          );
        }
      }
      process.stdout.write(
        `created schedule ${handle.scheduleId}: ${request.full ? 'full' : 'incremental'} ` +
          `${what} of connection ${connectionId}, ${whenText(timing)}` +
          `${request.paused ? ' (paused)' : ''}\n`,
      );
      // Created as asked (a reconnect makes it good), but its passes fail until then: said.
      // Asked only of a worker that polls: with none, the query would wait out its deadline.
      const answers = await requireWorkerOf(client, config, connectionWorkflowId(connectionId))
        .then(() => true)
        .catch(() => false);
      const reauth = answers ? await reauthNeeded(client, connectionId) : undefined;
      if (reauth) {
        process.stderr.write(
          `ebsync: warning: ${reauth.what}, so its scheduled passes fail until then: ${reauth.run}\n`,
        );
      }
    });
  });
}

/** `ebsync schedule list`. */
export function scheduleListCommand(flags: { connection?: string; json?: boolean }): Promise<void> {
  return runAction(() =>
    withClient(async (client) => {
      const { views, sealed } = await listMirrorSchedules(client, flags.connection);
      // None for a connection that does not exist says so (exit 1), not "no schedules": a
      // typo is not an empty list. A gone connection's schedules are still listed.
      if (views.length === 0 && sealed.length === 0 && flags.connection !== undefined) {
        await requireConnection(client, flags.connection);
      }
      // Those sealed with other keys are listed as unreadable and fail the command: another
      // deployment's in a shared namespace, or this one's whose key was replaced (its passes
      // then fail), cannot be told apart from here.
      const refuseSealed = (): void => {
        if (sealed.length === 0) return;
        throw sealedOtherwiseError(
          sealed.length === 1 ? 'schedule' : 'schedules',
          sealed,
          "sealed with another key: another deployment's in this Temporal namespace, or a key no longer given",
          'what it mirrors cannot be read; give this shell the key that sealed it, or give each deployment a namespace of its own (TEMPORAL_NAMESPACE)',
        );
      };
      if (flags.json) {
        process.stdout.write(`${jsonText(views, 2)}\n`);
        refuseSealed();
        return;
      }
      if (views.length === 0 && sealed.length === 0) {
        const of = flags.connection === undefined ? '' : ` of connection ${flags.connection}`;
        process.stdout.write(`no schedules${of}: create one with 'ebsync schedule create'\n`);
        return;
      }
      for (const v of views) {
        const next = v.paused ? 'paused' : `next ${v.nextRuns[0] ?? '-'}`;
        process.stdout.write(
          printable(`${v.scheduleId}  ${v.when ?? '?'}  ${v.overlap}  ${next}\n`),
        );
      }
      for (const id of sealed) process.stdout.write(printable(`${id}  unreadable\n`));
      refuseSealed();
    }),
  );
}

/** `ebsync schedule describe <id>`. */
export function scheduleDescribeCommand(id: string, flags: { json?: boolean }): Promise<void> {
  return runAction(() => {
    checkScheduleId(id);
    return withClient(async (client) => {
      const view = viewOf(await describeOrExplain(client.schedule.getHandle(id)));
      process.stdout.write(flags.json ? `${jsonText(view, 2)}\n` : report(describeText, view));
    });
  });
}
