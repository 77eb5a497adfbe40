import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { mirrorWorkflow } from '../workflows/mirror.js';
import { mirrorWorkflowId } from '../workflows/mirror-types.js';
import { scrubText } from '../worker/redact.js';
import { listMirrorSchedules, type ScheduleView } from './schedule-views.js';
import { shownSafely } from './shown-text.js';
import { mirrorScheduleId } from './schedules.js';
import { defaultDestination } from './sync.js';
import { messageOf } from './workflow-deadline.js';

/*
 * The demo's connection while `npm start` runs on the user's own service (EBS_BASE_URL). Its
 * sandbox runs only beside a demo start: left as they were, each firing of its schedules was a
 * pass failing against the stopped sandbox, every 15 minutes, and a pass of it in flight (a
 * firing, or a demo start stopped mid-pass) retried there for as long as the worker ran. So a
 * start on the user's service pauses its schedules under a note of its own and cancels its runs
 * in flight, and the next demo start resumes exactly those schedules: one its user paused (any
 * other note) is theirs, and stays as it is. None of this stops the user's own start: what
 * fails is said in one line, with the commands that do it by hand.
 */

/** The note that marks a pause as this one's (shown by `ebsync schedule list`). */
export const DEMO_AWAY_NOTE =
  "paused by 'npm start' on your own service: the demo's sandbox is not running; a demo start resumes it";

const RESUME_NOTE = "resumed by 'npm start' on demo data";

/** Why something failed, for one line: the error's message and its causes', never a stack. */
const why = (error: unknown): string => shownSafely(scrubText(messageOf(error)));

/**
 * What a start on the user's own service does to the demo's connection, in lines: its
 * schedules paused, its runs in flight cancelled. Throws only when `stopped` (Ctrl-C) cut it.
 */
export async function setDemoAside(
  client: Client,
  config: Config,
  connectionId: string,
  stopped: AbortSignal,
): Promise<string> {
  let views: ScheduleView[] | undefined;
  let paused: string;
  try {
    views = (await listMirrorSchedules(client, connectionId)).views;
    paused = await pauseDemoSchedules(client, views);
  } catch (error) {
    if (stopped.aborted) throw error;
    paused = notPausedText(config, connectionId, views, error);
  }
  return paused + (await cancelDemoRuns(client, config, connectionId, views ?? [], stopped));
}

/**
 * Pauses the active schedules among views, and says which schedules that start holds paused
 * (now or by an earlier start), with the commands that remove them for good; '' when there
 * are none.
 */
async function pauseDemoSchedules(client: Client, views: readonly ScheduleView[]): Promise<string> {
  const ours: string[] = [];
  for (const view of views) {
    if (!view.paused) await client.schedule.getHandle(view.scheduleId).pause(DEMO_AWAY_NOTE);
    else if (view.note !== DEMO_AWAY_NOTE) continue;
    ours.push(view.scheduleId);
  }
  if (ours.length === 0) return '';
  const one = ours.length === 1;
  const deletes = ours.map((id) => `'npx ebsync schedule delete ${id}'`).join(', ');
  return (
    `The demo's ${one ? 'schedule' : 'schedules'} ${ours.join(', ')} ${one ? 'is' : 'are'} paused ` +
    `while you use your own service: its sandbox runs only under 'npm start' without ` +
    `EBS_BASE_URL, which resumes ${one ? 'it' : 'them'}; to remove ${one ? 'it' : 'them'} for good: ${deletes}.\n`
  );
}

/**
 * Why the demo's schedules are not paused, and the commands that pause or delete them: those
 * found active, or, when they could not be listed, the ones a demo start makes.
 */
function notPausedText(
  config: Config,
  connectionId: string,
  views: readonly ScheduleView[] | undefined,
  error: unknown,
): string {
  const ids =
    views?.filter((v) => !v.paused).map((v) => v.scheduleId) ??
    [false, true].map((full) =>
      mirrorScheduleId(config, {
        connectionId,
        what: 'all',
        destination: defaultDestination(config),
        full,
      }),
    );
  const each = (verb: string): string =>
    ids.map((id) => `'npx ebsync schedule ${verb} ${id}'`).join(' and ');
  return (
    `The demo's schedules could not be paused (${why(error)}): each of their passes fails ` +
    `against the demo's stopped sandbox. Pause them with ${each('pause')}, or delete them with ` +
    `${each('delete')}.\n`
  );
}

/** Whether a workflow id is a mirror of this connection (`mirror-<connection>-<key>`). */
function isMirrorOf(workflowId: string, connectionId: string): boolean {
  const prefix = mirrorWorkflowId(connectionId, '');
  return workflowId.startsWith(prefix) && /^[0-9a-f]{12}$/.test(workflowId.slice(prefix.length));
}

/**
 * Cancels the demo's runs in flight: its schedules' runs (one that waits for a pass would start
 * it) and its passes, whoever started them. Says which, and why; '' when none ran.
 */
async function cancelDemoRuns(
  client: Client,
  config: Config,
  connectionId: string,
  views: readonly ScheduleView[],
  stopped: AbortSignal,
): Promise<string> {
  const ids = new Set(views.flatMap((v) => v.running));
  const cancelled: string[] = [];
  try {
    const queue = config.temporal.taskQueue.replace(/'/g, "\\'");
    for await (const execution of client.workflow.list({
      query: `WorkflowType = '${mirrorWorkflow.name}' AND ExecutionStatus = 'Running' AND TaskQueue = '${queue}'`,
    })) {
      if (isMirrorOf(execution.workflowId, connectionId)) ids.add(execution.workflowId);
    }
    for (const id of ids) {
      try {
        await client.workflow.getHandle(id).cancel();
        cancelled.push(id);
      } catch (error) {
        // Ended meanwhile: nothing left to cancel.
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }
  } catch (error) {
    if (stopped.aborted) throw error;
    return (
      `The demo's passes in flight could not all be cancelled (${why(error)}): they retry ` +
      `against its stopped sandbox until 'npx ebsync sync --cancel --connection ${connectionId}' ` +
      `cancels them.\n`
    );
  }
  if (cancelled.length === 0) return '';
  // A schedule's run and the pass it started are one pass to the user.
  const one = cancelled.filter((id) => isMirrorOf(id, connectionId)).length <= 1;
  return (
    `Cancelled the demo's ${one ? 'pass' : 'passes'} in flight (${cancelled.join(' and ')}): its ` +
    `sandbox runs only under 'npm start' without EBS_BASE_URL, so ${one ? 'it' : 'they'} could ` +
    `only fail; an interrupted pass deletes nothing, and the next demo start mirrors on.\n`
  );
}

/**
 * Resumes the demo's schedules a start on the user's own service paused (DEMO_AWAY_NOTE), and
 * says so; '' when there were none.
 */
export async function resumeDemoSchedules(client: Client, connectionId: string): Promise<string> {
  const { views } = await listMirrorSchedules(client, connectionId);
  const resumed: string[] = [];
  for (const view of views) {
    if (!view.paused || view.note !== DEMO_AWAY_NOTE) continue;
    await client.schedule.getHandle(view.scheduleId).unpause(RESUME_NOTE);
    resumed.push(view.scheduleId);
  }
  if (resumed.length === 0) return '';
  return `Resumed the demo's ${resumed.join(', ')}, paused while 'npm start' ran on your own service.\n`;
}
