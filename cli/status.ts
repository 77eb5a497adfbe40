import { jsonText, report as reportOf, shownSafely } from './shown-text.js';
import { loadStartupConfig } from './startup-config.js';
import { connectClient } from '../worker/temporal-client.js';
import { runAction, UserError } from './errors.js';
import { runUntilStopped } from './stopped-exit.js';
import { collectStatus, type PassView, type StatusReport } from './status-model.js';
import { pausedText, probeLine, progressLine, reachLine } from './mirror-summary.js';
import { busyLine, retryLine, slotWaitLine, workerWaitLine } from './pass-retry.js';
import { counted } from './counted.js';
import { endedWords } from './status-sections.js';
import { requireWorker } from './worker-check.js';

function when(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

function ms(value: number | null): string {
  return value === null ? '-' : `≤${value}ms`;
}

/** The lines of one pass in the report: its status, progress, what holds it, and its link. */
export function passLine(label: string, pass: PassView, destination: string | null): string[] {
  const lines = [`    ${label.padEnd(8)}${pass.status} since ${when(pass.startedAt)}`];
  if (pass.closedAt !== null) lines[0] += `, ended ${when(pass.closedAt)}`;
  if (pass.progress)
    lines.push(`            ${progressLine(pass.progress, endedWords(pass.status))}`);
  if (pass.retrying) lines.push(`            ${retryLine(pass.retrying, destination)}`);
  if (pass.slotWaitUntil !== undefined) {
    lines.push(`            ${slotWaitLine(pass.slotWaitUntil)}`);
  }
  if (pass.workerWait) lines.push(`            ${workerWaitLine(pass.workerWait)}`);
  if (pass.busy) lines.push(`            ${busyLine(pass.busy)}`);
  if (pass.progress?.reach) lines.push(`            reach: ${reachLine(pass.progress.reach)}`);
  if (pass.progress?.probe?.probes) {
    lines.push(`            by id: ${probeLine(pass.progress.probe)}`);
  }
  for (const gap of pass.progress?.gaps ?? []) lines.push(`            reach gap: ${gap}`);
  for (const line of pass.progress?.refusals ?? []) lines.push(`            ${line}`);
  for (const line of pass.progress?.forbidden ?? []) lines.push(`            not read: ${line}`);
  const paused = pass.progress ? pausedText(pass.progress) : null;
  if (paused) lines.push(`            why: ${paused}`);
  if (pass.error) lines.push(`            error: ${pass.error}`);
  lines.push(`            ${pass.uiUrl}`);
  return lines;
}

function automationLines(report: StatusReport): string[] {
  const a = report.automations;
  if (a.error) return [`  could not be read: ${a.error}`];
  if (a.endpoints.length === 0) return ["  none: 'ebsync webhooks endpoints add' adds one"];
  return a.endpoints.map((e) => {
    const detail =
      e.state === 'breaker open'
        ? ` until ${when(Date.parse(e.openUntil ?? ''))}`
        : e.disabledReason
          ? ` (${e.disabledReason})`
          : '';
    return `  ${e.name}  ${e.url}  ${e.state}${detail}  failures in a row: ${e.failures}`;
  });
}

function inboxLines(report: StatusReport, now: number): string[] {
  const inbox = report.inbox;
  if (inbox.error) return [`  could not be read: ${inbox.error}`];
  if (inbox.connections.length === 0) return ['  empty: no notices waiting or drained lately'];
  return inbox.connections.map((c) => {
    const oldest =
      c.oldestPendingAt === null ? '' : `, oldest ${Math.round((now - c.oldestPendingAt) / 1000)}s`;
    const refused =
      c.lastRefusal === undefined ? '' : `; the drain's last refusal: ${c.lastRefusal}`;
    return `  ${c.connectionId}  ${c.pending} pending${oldest}, ${c.drainedLastMinute} drained in the last minute (${c.drainedPerSecond}/s)${refused}`;
  });
}

/** The receiver's line of `ebsync status`. */
export function webhooksLine(report: StatusReport): string {
  const w = report.webhooks;
  if (w.running && w.error)
    return `Webhook receiver: running at ${w.endpoint}, counters not shown (${w.error})`;
  return w.running
    ? `Webhook receiver: ${w.deliveriesPerMinute}/min, ${w.delivered} delivered, ${w.rejected} rejected, ` +
        `${w.failed} not stored (503), latency p50 ${ms(w.latencyP50Ms)} p95 ${ms(w.latencyP95Ms)} (since ${when(w.since)})`
    : new URL(w.endpoint).port === '0'
      ? `Webhook receiver: not known (${w.error ?? ''})`
      : `Webhook receiver: not running at ${w.endpoint} (${w.error ?? 'no answer'})`;
}

/** The report as a person reads it in a terminal. */
export function statusText(report: StatusReport): string {
  const lines: string[] = ['Connections'];
  if (report.connections.length === 0) lines.push('  none: add one with ebsync connect');
  for (const c of report.connections) {
    const who = c.businessName ?? '(business name not shown)';
    const error = c.lastError ? `, last error: ${c.lastError}` : '';
    // With one connection the total line below is its own count: said once.
    const limited =
      report.connections.length > 1 && c.rateLimited.lastHour > 0
        ? `, 429s last hour: ${c.rateLimited.lastHour}`
        : '';
    lines.push(
      `  ${c.connectionId}  ${c.state}  ${c.kind}  ${who}${limited}${error}`,
      `    ${c.uiUrl}`,
    );
  }
  if (report.connections.length > 0) {
    const of = report.connections.length > 1 ? ', all connections' : '';
    lines.push(`  429s last hour${of}: ${report.rateLimitedLastHour}`);
  }
  lines.push('', 'Mirrors');
  if (report.mirrors.length === 0) lines.push("  none yet: start one with 'ebsync sync'");
  for (const m of report.mirrors) {
    const history = m.connectionGone ? `  (history: ${m.connectionGone})` : '';
    lines.push(
      `  ${m.connectionId} → ${m.destination ?? '(destination not reported yet)'}${history}`,
    );
    if (m.current) lines.push(...passLine('current', m.current, m.destination));
    if (m.last) lines.push(...passLine('last', m.last, m.destination));
    if (m.lastCompleted) lines.push(...passLine('before', m.lastCompleted, m.destination));
  }
  lines.push('', 'Schedules');
  if (report.schedules.length === 0) lines.push("  none: 'ebsync schedule create' adds one");
  for (const sc of report.schedules) {
    // Active with no next time is a schedule that never runs (a problem below), not one unknown.
    const next = sc.paused
      ? 'paused'
      : `next ${sc.nextRunAt === null ? 'never' : when(sc.nextRunAt)}`;
    lines.push(`  ${sc.scheduleId}  ${sc.when ?? '?'}  ${next}`);
    const run = sc.lastRun;
    if (run) {
      const why = run.skipped
        ? `: ${run.skipped}`
        : run.waiting
          ? ` ${run.waiting}`
          : run.error
            ? `: ${run.error}`
            : '';
      const shown = run.skipped ? 'skipped' : run.waiting ? 'waiting' : run.status;
      lines.push(`    last run ${shown} (${when(run.startedAt)})${why}`);
    }
  }
  lines.push(
    '',
    webhooksLine(report),
    '',
    `Webhook inbox (${report.inbox.store})`,
    ...inboxLines(report, Date.now()),
    '',
    'Automation endpoints',
    ...automationLines(report),
    '',
    report.problems.length === 0
      ? 'All healthy.'
      : `${counted(report.problems.length, 'problem')}:`,
  );
  for (const p of report.problems) lines.push(`  ${p.message}`);
  return `${lines.join('\n')}\n`;
}

/** `ebsync status`. */
export async function statusCommand(flags: { json?: boolean; serve?: boolean }): Promise<void> {
  await (flags.serve ? runUntilStopped : runAction)(async () => {
    if (flags.serve && flags.json) {
      throw new UserError(
        '--serve and --json do not go together: --serve serves the page (its JSON is at /status.json), --json prints the report once',
        2,
      );
    }
    const config = loadStartupConfig();
    if (flags.serve) {
      const { serveUntilSignal } = await import('./status-server.js');
      await serveUntilSignal(config);
      return;
    }
    const { client, close } = await connectClient(config);
    try {
      // With no worker the report still stands (the store's inbox and the last passes are
      // there to read): the missing worker is its first problem, not the only thing said.
      const noWorker = await requireWorker(client, config).then(
        () => null,
        (error: unknown) => {
          if (error instanceof UserError) return error.message;
          throw error;
        },
      );
      const report = await collectStatus(client, config);
      if (noWorker !== null) {
        report.problems.unshift({ connectionId: '', kind: 'no_worker', message: noWorker });
      }
      process.stdout.write(flags.json ? `${jsonText(report, 2)}\n` : reportOf(statusText, report));
      if (report.problems.length > 0) {
        // The text report ends with the problems; stderr only says that there are some, so a
        // terminal shows each once. Under --json, stdout is for programs: each is said here.
        if (flags.json) {
          for (const p of report.problems)
            process.stderr.write(`ebsync: ${shownSafely(p.message)}\n`);
        } else {
          process.stderr.write(
            `ebsync: ${counted(report.problems.length, 'problem')}, listed at the end of the report\n`,
          );
        }
        process.exitCode = 1;
      }
    } finally {
      await close();
    }
  });
}
