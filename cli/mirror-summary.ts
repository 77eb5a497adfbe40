import { counted } from './counted.js';
import { maskCredentials } from '../config/database-locations.js';
import {
  etaOf,
  isIncomplete,
  isPartlyWrittenLine,
  type IdProbe,
  type LearnedReach,
  type MirrorCounts,
  type MirrorProgress,
} from '../workflows/mirror-types.js';
import { DEFAULT_REACH_LIMIT } from '../config/schema.js';

/*
 * A mirror pass's progress and summary as text: `ebsync sync`, `ebsync status` and the main
 * job print them. A module of its own so `ebsync status` need not load the sync command (its
 * destinations and their drivers).
 */

/** A duration as the progress lines show it: `42s`, `3m07s`, `1h05m`. */
export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/**
 * The words after a pass's count read: of how many the lists counted (`/3816 read` unless
 * `withinCount` says it otherwise: the status page adds the percent) or, once reads went past
 * that count (events read by id, records read again), that count said apart, since "4116/3816"
 * would read as an error; in a few words (`compact`) beside the progress bar, whose line a
 * terminal cuts at its width. The terminal and the status page both say it through here.
 */
export function readOf(
  c: ReadCounts,
  withinCount: (expected: number) => string = (expected) => `/${expected} read`,
  compact = false,
): string {
  if (c.expected <= 0) return ' read';
  if (c.soFar) {
    return compact
      ? ` read (${c.expected} listed so far)`
      : ` read (the lists counted ${c.expected} so far; events are read by id, uncounted)`;
  }
  if (c.read > c.expected) {
    return compact
      ? ` read (${c.expected} listed)`
      : ` read (the lists counted ${c.expected}; the rest came by id or again)`;
  }
  return withinCount(c.expected);
}

/**
 * What a pass read and its lists counted. `soFar`: a running pass has a partition that reads
 * events by id not done yet, so the lists' count is not the whole (event bookings are counted
 * by their first page, the events they name never) and grows while it runs; "3709/3816" after
 * "3554 read (the lists counted 3475…)" read as a count that went back.
 */
export interface ReadCounts {
  read: number;
  expected: number;
  soFar?: boolean;
}

/** A pass's ReadCounts, as its progress says them. */
export function readCounts(p: Pick<MirrorProgress, 'counts' | 'partitions' | 'phase'>): ReadCounts {
  const { read, expected } = p.counts;
  return { read, expected, soFar: (p.partitions.uncounted ?? 0) > 0 && RUNNING.has(p.phase) };
}

/** What a pass read, against what its lists counted: "3816/3816 read" (see readOf). */
export function readText(c: ReadCounts, compact = false): string {
  return `${c.read}${readOf(c, undefined, compact)}`;
}

/** Cells of the progress bar `ebsync sync` and the main job draw (cli-progress's default). */
export const BAR_CELLS = 40;

/**
 * How full a pass's progress bar is, from 0 to 1: what it read of what its lists counted
 * (records no query reaches count as settled, as in the ETA). Only a finished pass fills it.
 * Once the lists' count is read the pass may still be reading events by id, probing lead ids
 * or sweeping deletions, none of which a list counts beforehand; a full bar there claimed it
 * done for minutes. So a pass not done stops one cell of `cells` short.
 */
export function barFraction(
  p: Pick<MirrorProgress, 'phase' | 'counts' | 'partitions'>,
  cells: number = BAR_CELLS,
): number {
  if (p.phase === 'done' || p.phase === 'incomplete') return 1;
  const c = p.counts;
  const share = c.expected > 0 ? Math.min(1, (c.read + c.unreachable) / c.expected) : 0;
  // Early in a pass only the small lists may have counted: read against their count alone,
  // the bar stood nearly full while the leads were still to come. It is weighed by the share
  // of the counted lists whose count is known.
  const countable = p.partitions.total - (p.partitions.uncounted ?? 0);
  const known =
    p.partitions.counted === undefined || countable <= 0
      ? 1
      : Math.min(1, p.partitions.counted / countable);
  return Math.min(share * known, (cells - 1) / cells);
}

/** ', ETA 4m58s' while a pass is at work and its ETA is known; '' once it is over. */
export function etaText(p: MirrorProgress, ended?: string): string {
  if (p.etaMs === null || ended !== undefined || !RUNNING.has(p.phase)) return '';
  return `, ETA ${duration(p.etaMs)}`;
}

/**
 * What a pass did with the records it read: '250 written, 3 unchanged, 120 read again,
 * 0 deleted, ' (without email, read again, passed over and refused only when there are some),
 * as the progress line and the status page say it.
 */
export function outcomeText(c: MirrorCounts): string {
  const again = c.again ?? 0;
  const passedOver = c.passedOver ?? 0;
  const withoutEmail = c.withoutEmail ?? 0;
  return (
    `${c.written} written${withoutEmail ? ` (${withoutEmail} without email)` : ''}, ` +
    `${c.unchanged} unchanged, ${again ? `${again} read again, ` : ''}` +
    `${passedOver ? `${passedOver} passed over, ` : ''}` +
    `${c.deleted} deleted, ${c.refused ? `${c.refused} refused, ` : ''}`
  );
}

/** One line of a pass's progress: counts, partitions, rate and, while known, the ETA. */
export function progressLine(p: MirrorProgress, ended?: string): string {
  const read = readText(readCounts(p));
  const eta = etaText(p, ended);
  const slowed = slowedLine(p);
  return (
    `${phaseText(p, ended)}: ${read}, ${outcomeText(p.counts)}` +
    `${p.partitions.done}/${p.partitions.total} partitions, ` +
    `${p.ratePerSecond}/s${eta}${slowed ? `; ${slowed}` : ''}`
  );
}

/**
 * Why a running pass goes slower than EBS_RATE_LIMIT lets it, or '' when it does not: the
 * service turned requests away, and the connection's pace was cut (workflows/rate-limit.ts).
 */
export function slowedLine(p: Pick<MirrorProgress, 'pace' | 'phase' | 'noRateLimit'>): string {
  if (p.pace === undefined || p.pace >= 1 || !RUNNING.has(p.phase)) return '';
  if (p.noRateLimit) {
    // No rate to slow down to: the pass waits out each Retry-After instead, and the setting
    // is what would keep it under the service's limit.
    return (
      `the service turns requests away for its rate and EBS_RATE_LIMIT is not set (or 0, no limit): ` +
      `set it on the workers to the service's limit (requests a second) to stay under it`
    );
  }
  const percent = p.pace * 100;
  return (
    `slowed to ${percent < 10 ? percent.toFixed(1) : Math.round(percent)} % of EBS_RATE_LIMIT: ` +
    `the service turned requests away for its rate; the pace climbs back once it stops`
  );
}

const RUNNING: ReadonlySet<MirrorProgress['phase']> = new Set(['planning', 'reading', 'deleting']);

/**
 * What a pass learned of the service's reach, in one line. A short page that held records shows
 * the reach itself; an empty one only that it is no more than that page's offset (the pages
 * before it were not all seen short), so the line says "at most" rather than a figure the
 * service may not reach.
 */
export function reachLine(r: LearnedReach): string {
  const bound = r.items === 0 ? 'at most ' : '';
  return (
    `the service reaches ${bound}${r.reach} results a query, not the ${r.configured} EBS_REACH_LIMIT ` +
    `guessed (${DEFAULT_REACH_LIMIT} unless set): page ${r.page} of ${r.resource} at ${r.per} a page held ${r.items} ` +
    `of a total_count of ${r.total}; queries over it were cut again`
  );
}

/**
 * Why a pass read records it already had, so that read = written + up to date + read again +
 * refused adds up without a first pass calling its own records "already up to date".
 */
function againLine(p: MirrorProgress, again: number): string {
  const why: string[] = [];
  // Events read by id come without their bookings: only a lead's come twice this way.
  if (p.subjects.includes('leads')) {
    why.push("a lead's bookings come with it and again from the booking list");
  }
  if (p.reach) why.push("queries cut under the service's reach overlap");
  return (
    `${counted(again, 'record')} this pass had read already, each counted once above` +
    (why.length > 0 ? ` (${why.join('; ')})` : '')
  );
}

/** What the read by id of the lead ids the lists skipped found, in one line. */
export function probeLine(probe: IdProbe): string {
  return (
    `${probe.found} leads no filter reached, read by id: ${probe.probes} ids between those ` +
    `the lead list returned`
  );
}

/**
 * The head of the lines of lists the pass's credential may not read (MirrorProgress.forbidden),
 * said the same by the summary, `ebsync status` and the status page.
 */
export function forbiddenHead(lines: readonly string[]): string {
  return (
    `${counted(lines.length, 'list')} the connection's credential may not read, left unread ` +
    `(none of their records marked deleted); give the connection a credential that may, then ` +
    `run this sync again:`
  );
}

/**
 * The exit code a finished pass deserves: 0 done, 1 failed, 3 incomplete (it ran to its end
 * but left records unreachable or refused: the summary says which).
 */
export function exitCodeOf(p: MirrorProgress, workflowStatus = 'COMPLETED'): number {
  // Canceled, terminated or timed out: the pass did not do all it was asked.
  if (p.phase === 'failed' || !['COMPLETED', 'RUNNING'].includes(workflowStatus)) return 1;
  // Paused: it stopped cleanly on a destination's spent quota, the rest still unwritten.
  if (
    p.phase === 'incomplete' ||
    p.phase === 'paused' ||
    isIncomplete(p.counts, p.forbidden, p.refusals)
  ) {
    return 3;
  }
  return 0;
}

/**
 * Whether a pass wrote records only in part: a CRM took the deal but refused its contact or
 * link. Such a record counts as written, not refused; its refusal line says `written in part`
 * (activities/mirror/write-records.ts), and the next pass writes it again.
 */
export const partlyWritten = (p: { refusals?: readonly string[] }): boolean =>
  (p.refusals ?? []).some(isPartlyWrittenLine);

/**
 * Why a pass paused and when to run it again (a destination's daily quota spent), or null for
 * a pass that did not pause.
 */
export function pausedText(p: MirrorProgress): string | null {
  if (!p.pausedUntil) return null;
  const why = p.error ?? 'the destination takes no calls for now';
  // The destinations' own words often say until when already.
  const when = why.includes(p.pausedUntil) ? 'then' : `after ${p.pausedUntil}`;
  return `${why}; run this sync again ${when}`;
}

/**
 * The phase a pass is in; for one that ended mid-way (`ended`: canceled, failed…), how it
 * ended and in which phase, so a stopped pass never reads as one still at work.
 */
export function phaseText(p: MirrorProgress, ended?: string): string {
  return ended !== undefined && RUNNING.has(p.phase) ? `${ended} while ${p.phase}` : p.phase;
}

/** A Temporal workflow status (CANCELLED, TERMINATED…) as the status page spells it. */
export function endedAs(workflowStatus: string): string {
  return workflowStatus === 'CANCELLED'
    ? 'canceled'
    : workflowStatus.toLowerCase().replace(/_/g, ' ');
}

/** The summary a finished (or failed) pass prints. */
export function summaryText(p: MirrorProgress, workflowStatus = 'RUNNING'): string {
  const c = p.counts;
  // A pass whose workflow was cancelled or terminated keeps the phase it was stopped in.
  const state = phaseText(p, workflowStatus === 'RUNNING' ? undefined : endedAs(workflowStatus));
  const lines = [
    `Mirror of ${p.subjects.join(', ')} (${p.mode}${p.rewrite ? ', every record rewritten' : ''}) for connection ${p.connectionId}: ${state}`,
    `  destination  ${maskCredentials(p.destination)}`,
    `  read         ${counted(c.read, 'record')} in ${counted(c.pages, 'page')}, ${counted(c.requests, 'request')}, ${duration(p.elapsedMs)}`,
    `  written      ${c.written} changed or new; ${c.unchanged} already up to date; ${c.deleted} marked deleted`,
  ];
  const again = c.again ?? 0;
  if (again > 0) lines.push(`  read again   ${againLine(p, again)}`);
  const passedOver = c.passedOver ?? 0;
  if (passedOver > 0) {
    lines.push(
      `  passed over  ${counted(passedOver, 'record')} the destination has no place for (bookings, appointments: a CRM takes leads and events)`,
    );
  }
  const withoutEmail = c.withoutEmail ?? 0;
  if (withoutEmail > 0) {
    // Written and complete: said so that a CRM with fewer contacts than deals is no mystery.
    lines.push(
      `  no email     ${counted(withoutEmail, 'record')} written without an email address or a contact (empty, or text that is no address)`,
    );
  }
  if (p.reach) lines.push(`  reach        ${reachLine(p.reach)}`);
  if (p.probe && p.probe.probes > 0) lines.push(`  by id        ${probeLine(p.probe)}`);
  if (c.unreachable > 0 || p.gaps.length > 0) {
    lines.push(
      `  unreachable  ${c.unreachable} of ${counted(c.expected, 'record')} the service counts:`,
    );
    for (const gap of p.gaps) lines.push(`               ${gap}`);
  }
  const refusals = p.refusals ?? [];
  if ((c.refused ?? 0) > 0 || refusals.length > 0) {
    // Records the destination took only in part count as written: said apart, never "0 refused".
    const partly = partlyWritten(p) ? 'records written only in part' : '';
    const head =
      (c.refused ?? 0) > 0
        ? `  refused      ${counted(c.refused, 'record')} the destination would not take${partly ? `, and ${partly}` : ''}`
        : `  in part      ${partly}`;
    lines.push(`${head}; the next pass tries them again:`);
    for (const line of refusals) lines.push(`               ${line}`);
    // At most 20 lines are kept: the rest are counted, never dropped unsaid.
    const listed = refusals.filter((line) => !isPartlyWrittenLine(line)).length;
    if ((c.refused ?? 0) > listed) {
      lines.push(
        `               and ${counted(c.refused - listed, 'more record')} refused, not listed`,
      );
    }
  }
  const forbidden = p.forbidden ?? [];
  if (forbidden.length > 0) {
    lines.push(`  not read     ${forbiddenHead(forbidden)}`);
    for (const line of forbidden) lines.push(`               ${line}`);
  }
  const paused = pausedText(p);
  if (paused) lines.push(`  paused       ${paused}`);
  else if (p.error) lines.push(`  error        ${p.error}`);
  return `${lines.join('\n')}\n`;
}

/**
 * A running pass's progress as of `now`. The workflow answers its query with the time of its
 * last workflow task, so while one long activity read (events by id at a slowed pace) the
 * elapsed time, rate and ETA stood still for minutes ("94/s, ETA 15s" for two): they are
 * worked out again here from when the pass started.
 *
 * `waiting`: the pass reads nothing for now (a paused connection, its requests held for their
 * rate slot: PassView.retrying's wait, slotWaitUntil). Over the wall clock its rate fell the
 * longer it waited, as if it read ever slower: it keeps the rate the workflow answered, that up
 * to its last page (the wait runs no workflow task), and has no ETA, since how long the wait
 * lasts is not known. Its elapsed time runs on.
 */
export function asOfNow(p: MirrorProgress, now = Date.now(), waiting = false): MirrorProgress {
  if (!RUNNING.has(p.phase) || p.startedAt === null) return p;
  const elapsedMs = Math.max(p.elapsedMs, now - p.startedAt);
  if (waiting) return { ...p, elapsedMs, etaMs: null };
  const rate = elapsedMs > 0 ? (p.counts.read * 1000) / elapsedMs : 0;
  return {
    ...p,
    elapsedMs,
    ratePerSecond: Math.round(rate * 10) / 10,
    etaMs: etaOf(p.counts, false, rate, p.partitions.uncounted),
  };
}
