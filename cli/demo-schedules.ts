import type { Client } from '@temporalio/client';
import { listMirrorSchedules } from './schedule-views.js';

/*
 * The demo's schedules while `npm start` runs on the user's own service (EBS_BASE_URL). They
 * mirror the demo's connection, whose sandbox runs only beside a demo start: left active, each
 * firing was a pass failing against the stopped sandbox, every 15 minutes. So a start on the
 * user's service pauses them under a note of its own, and the next demo start resumes exactly
 * those: a schedule its user paused (any other note) is theirs, and stays as it is.
 */

/** The note that marks a pause as this one's (shown by `ebsync schedule list`). */
export const DEMO_AWAY_NOTE =
  "paused by 'npm start' on your own service: the demo's sandbox is not running; a demo start resumes it";

const RESUME_NOTE = "resumed by 'npm start' on demo data";

/**
 * Pauses the active schedules of the demo's connection, and says which schedules that start
 * holds paused (now or by an earlier start), with the commands that remove them for good; ''
 * when there are none.
 */
export async function pauseDemoSchedules(client: Client, connectionId: string): Promise<string> {
  const { views } = await listMirrorSchedules(client, connectionId);
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
