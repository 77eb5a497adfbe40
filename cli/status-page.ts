import { counted } from './counted.js';
import { createHash } from 'node:crypto';
import type {
  AutomationEndpointsView,
  ConnectionView,
  InboxView,
  MirrorView,
  PassView,
  ScheduleStatusView,
  StatusReport,
  WebhookReceiverView,
} from './status-model.js';
import { retryLine, slotWaitLine, workerWaitLine } from './pass-retry.js';
import { endedWords } from './status-sections.js';
import {
  barFraction,
  etaText,
  forbiddenHead,
  outcomeText,
  pausedText,
  phaseText,
  readCounts,
  readOf,
  slowedLine,
} from './mirror-summary.js';

/** Records-per-second samples of one mirror, oldest first: [epoch ms, records/s]. */
export type RateSeries = readonly (readonly [number, number])[];

const escapeHtml = (value: unknown): string =>
  String(value).replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] ?? ch,
  );

function when(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** A small line chart of the last hour: no script, no library. */
export function lineChart(series: RateSeries, now: number, unit: string, label: string): string {
  const width = 300;
  const height = 60;
  const from = now - 3_600_000;
  const points = series.filter(([t]) => t >= from);
  const max = Math.max(1, ...points.map(([, r]) => r));
  const xy = points
    .map(([t, r]) => {
      const x = ((t - from) / 3_600_000) * width;
      const y = height - (r / max) * (height - 4);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(' ');
  return (
    `<svg class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" ` +
    `aria-label="${escapeHtml(label)} over the last hour, peak ${Math.round(max)}${unit}">` +
    `<rect width="${width}" height="${height}" fill="#f6f8fa"/>` +
    (points.length > 1
      ? `<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="${xy}"/>`
      : points.length === 1
        ? `<circle r="2.5" fill="#0969da" cx="${xy.split(',')[0]}" cy="${xy.split(',')[1]}"/>`
        : `<text x="8" y="34" font-size="11" fill="#57606a">collecting samples…</text>`) +
    `<text x="${width - 4}" y="11" font-size="10" text-anchor="end" fill="#57606a">${Math.round(max)}${unit}</text>` +
    `</svg>`
  );
}

/** Refusals per minute of the last hour, minutes without any as 0, so the line drops to 0. */
function minuteSeries(
  perMinute: ConnectionView['rateLimited']['perMinute'],
  now: number,
): RateSeries {
  const counts = new Map(perMinute);
  const last = Math.floor(now / 60_000) * 60_000;
  return Array.from({ length: 60 }, (_, i) => {
    const start = last - (59 - i) * 60_000;
    return [start, counts.get(start) ?? 0] as const;
  });
}

/** The connection's 429s of the last hour: its count and a chart per minute. */
function limitedChart(connection: ConnectionView | undefined, now: number): string {
  const limited = connection?.rateLimited ?? { lastHour: 0, perMinute: [] };
  return (
    `<div class="chart-box" data-testid="limited-${escapeHtml(connection?.connectionId ?? '')}" data-count="${limited.lastHour}">` +
    `<div>429s, last hour: <b>${limited.lastHour}</b></div>` +
    lineChart(
      minuteSeries(limited.perMinute, now),
      now,
      '/min',
      'rate-limit refusals (429) per minute',
    ) +
    `</div>`
  );
}

function passBlock(
  label: string,
  pass: PassView,
  series: RateSeries,
  now: number,
  connection?: ConnectionView,
): string {
  const p = pass.progress;
  const parts = [
    `<div class="pass" data-testid="pass-${label}" data-status="${pass.status}">`,
    `<div><strong>${label}</strong> <span class="badge ${pass.status}">${escapeHtml(pass.status.replace('_', ' '))}</span> ` +
      `since ${when(pass.startedAt)}${pass.closedAt === null ? '' : `, ended ${when(pass.closedAt)}`} ` +
      `· <a href="${escapeHtml(pass.uiUrl)}" target="_blank" rel="noopener">Temporal UI</a></div>`,
  ];
  if (p) {
    const total = Math.max(p.counts.expected, p.counts.read, 1);
    // Full only once the pass is done: reads by id after the lists' count come after it.
    const percent = Math.round(barFraction(p, 100) * 100);
    const eta = etaText(p, endedWords(pass.status));
    // Within the lists' count the page says the percent its bar shows.
    const ofCount = (expected: number): string => ` of ${expected} read (${percent}%)`;
    parts.push(
      `<div class="bar" title="${p.counts.read} of ${total}"><div style="width:${percent}%"></div></div>`,
      `<div class="counts" data-testid="read-${label}" data-read="${p.counts.read}">` +
        `${escapeHtml(phaseText(p, endedWords(pass.status)))}: <b>${p.counts.read}</b>${readOf(readCounts(p), ofCount)}, ` +
        outcomeText(p.counts) +
        `${p.partitions.done}/${p.partitions.total} partitions, ${p.counts.requests} requests, ` +
        `${p.ratePerSecond}/s${eta}, ${duration(p.elapsedMs)} elapsed</div>`,
    );
    const slowed = slowedLine(p);
    if (slowed)
      parts.push(`<div class="counts" data-testid="slowed-${label}">${escapeHtml(slowed)}</div>`);
    if ((p.refusals ?? []).length > 0) {
      parts.push(
        `<div class="problems" data-testid="refusals-${label}">Refused by the destination (tried again next pass):<ul>` +
          (p.refusals ?? []).map((r) => `<li>${escapeHtml(r)}</li>`).join('') +
          `</ul></div>`,
      );
    }
    const forbidden = p.forbidden ?? [];
    if (forbidden.length > 0) {
      parts.push(
        `<div class="problems" data-testid="forbidden-${label}">${escapeHtml(forbiddenHead(forbidden))}<ul>` +
          forbidden.map((line) => `<li>${escapeHtml(line)}</li>`).join('') +
          `</ul></div>`,
      );
    }
    if (p.counts.unreachable > 0 || p.gaps.length > 0) {
      parts.push(
        `<div class="gaps">${counted(p.counts.unreachable, 'record')} out of reach:<ul>` +
          p.gaps.map((g) => `<li>${escapeHtml(g)}</li>`).join('') +
          `</ul></div>`,
      );
    }
  }
  if (pass.retrying) {
    parts.push(
      `<div class="error" data-testid="retrying-${label}">${escapeHtml(retryLine(pass.retrying, p?.destination))}</div>`,
    );
  }
  if (pass.slotWaitUntil !== undefined) {
    parts.push(
      `<div class="paused" data-testid="slot-wait-${label}">${escapeHtml(slotWaitLine(pass.slotWaitUntil))}</div>`,
    );
  }
  if (pass.workerWait) {
    parts.push(
      `<div class="paused" data-testid="worker-wait-${label}">${escapeHtml(workerWaitLine(pass.workerWait))}</div>`,
    );
  }
  const paused = pass.progress ? pausedText(pass.progress) : null;
  if (paused) parts.push(`<div class="paused">${escapeHtml(paused)}</div>`);
  if (pass.error) parts.push(`<div class="error">${escapeHtml(pass.error)}</div>`);
  if (pass.status === 'running') {
    parts.push(
      `<div class="charts"><div class="chart-box"><div>records per second</div>` +
        `${lineChart(series, now, '/s', 'records per second')}</div>${limitedChart(connection, now)}</div>`,
    );
  }
  parts.push('</div>');
  return parts.join('');
}

function mirrorBlock(
  m: MirrorView,
  series: RateSeries,
  now: number,
  connection: ConnectionView | undefined,
): string {
  return (
    `<section class="mirror" data-testid="mirror-${escapeHtml(m.connectionId)}">` +
    `<h3>${escapeHtml(m.connectionId)} → ${escapeHtml(m.destination ?? '(destination not reported yet)')}</h3>` +
    (m.connectionGone
      ? `<div class="history" data-testid="history-${escapeHtml(m.connectionId)}">History: ${escapeHtml(m.connectionGone)}</div>`
      : '') +
    (m.current ? passBlock('current', m.current, series, now, connection) : '') +
    (m.last ? passBlock('last', m.last, [], now) : '') +
    (m.lastCompleted ? passBlock('before', m.lastCompleted, [], now) : '') +
    `</section>`
  );
}

/** A button the page's script turns into `POST api/<kind>s/<id>/<action>` with the token. */
function actionButton(action: string, kind: 'connection' | 'schedule', id: string, text: string) {
  const path = `api/${kind}s/${encodeURIComponent(id)}/${action}`;
  return `<button data-action="${action}" data-${kind}="${escapeHtml(id)}" data-path="${escapeHtml(path)}">${text}</button>`;
}

function schedulesHtml(schedules: readonly ScheduleStatusView[]): string {
  if (schedules.length === 0) {
    return `<p data-testid="schedules">None: <code>ebsync schedule create</code> adds one.</p>`;
  }
  const rows = schedules.map((sc) => {
    const id = escapeHtml(sc.scheduleId);
    const run = sc.lastRun;
    const shown = run?.skipped
      ? 'skipped'
      : run?.waiting
        ? 'waiting'
        : run?.status.replace('_', ' ');
    const last = run
      ? `<span class="badge ${run.skipped || run.waiting ? 'paused' : run.status}">${escapeHtml(shown ?? '')}</span> ${when(run.startedAt)} ` +
        `<a href="${escapeHtml(run.uiUrl)}" target="_blank" rel="noopener">run</a>` +
        (run.skipped ? ` ${escapeHtml(run.skipped)}` : '') +
        (run.waiting ? ` ${escapeHtml(run.waiting)}` : '') +
        (run.error ? ` <span class="error">${escapeHtml(run.error)}</span>` : '')
      : 'none yet';
    const toggle = sc.paused ? 'resume' : 'pause';
    return (
      `<tr data-testid="schedule-${id}" data-paused="${sc.paused}"><td><a href="${escapeHtml(sc.uiUrl)}" target="_blank" rel="noopener">${id}</a></td>` +
      `<td>${escapeHtml(sc.what ?? '?')} (${escapeHtml(sc.mode ?? '?')}) of ${escapeHtml(sc.connectionId ?? '?')}</td>` +
      `<td>${escapeHtml(sc.when ?? '?')}</td>` +
      `<td><span class="badge ${sc.paused ? 'paused' : 'active'}">${sc.paused ? 'paused' : 'active'}</span></td>` +
      `<td>${sc.paused ? '-' : sc.nextRunAt === null ? 'never' : when(sc.nextRunAt)}</td><td>${last}</td>` +
      `<td>${actionButton('trigger', 'schedule', sc.scheduleId, 'Run now')} ` +
      `${actionButton(toggle, 'schedule', sc.scheduleId, toggle === 'pause' ? 'Pause' : 'Resume')}</td></tr>`
    );
  });
  return (
    `<table data-testid="schedules"><thead><tr><th>id</th><th>mirrors</th><th>when</th><th>state</th>` +
    `<th>next run</th><th>last run</th><th>actions</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
  );
}

function webhooksHtml(w: WebhookReceiverView, now: number): string {
  if (!w.running && new URL(w.endpoint).port === '0') {
    return `<p data-testid="webhooks" data-running="unknown">Not known (${escapeHtml(w.error ?? '')}).</p>`;
  }
  if (w.running && w.error) {
    return `<p data-testid="webhooks" data-running="true">Running at ${escapeHtml(w.endpoint)}, counters not shown (${escapeHtml(w.error)}).</p>`;
  }
  if (!w.running) {
    return `<p data-testid="webhooks" data-running="false">Not running at ${escapeHtml(w.endpoint)} (${escapeHtml(w.error ?? 'no answer')}).</p>`;
  }
  const ms = (v: number | null) => (v === null ? '-' : `≤${v} ms`);
  const series: [number, number][] = w.latencySeries.flatMap(([t, v]) =>
    v === null ? [] : [[t, v] as [number, number]],
  );
  return (
    `<div data-testid="webhooks" data-running="true" data-delivered="${w.delivered}" data-rejected="${w.rejected}">` +
    `<b>${w.deliveriesPerMinute}</b> deliveries/min (last 5 min) · ${w.delivered} delivered, ` +
    `${w.rejected} rejected, ${w.failed} not stored (503) since ${when(w.since)} · ` +
    `latency delivery → stored p50 ${ms(w.latencyP50Ms)}, p95 ${ms(w.latencyP95Ms)}` +
    `<div>${lineChart(series, now, ' ms', 'mean webhook latency per minute')}</div></div>`
  );
}

function inboxHtml(inbox: InboxView, now: number): string {
  if (inbox.error) {
    return `<p class="error" data-testid="inbox">Could not read the inbox in ${escapeHtml(inbox.store)}: ${escapeHtml(inbox.error)}</p>`;
  }
  const pending = inbox.connections.reduce((n, c) => n + c.pending, 0);
  const head = `<div data-testid="inbox" data-pending="${pending}"><p class="meta">In ${escapeHtml(inbox.store)}</p>`;
  if (inbox.connections.length === 0) {
    return `${head}<p>Empty: no notices waiting or drained in the last minute.</p></div>`;
  }
  const rows = inbox.connections.map(
    (c) =>
      `<tr data-connection="${escapeHtml(c.connectionId)}" data-pending="${c.pending}" data-drained="${c.drainedPerSecond}">` +
      `<td>${escapeHtml(c.connectionId)}</td><td>${c.pending}</td>` +
      `<td>${c.oldestPendingAt === null ? '-' : `${Math.round((now - c.oldestPendingAt) / 1000)} s`}</td>` +
      `<td>${c.drainedLastMinute} (${c.drainedPerSecond}/s)</td></tr>`,
  );
  return (
    `${head}<table><thead><tr><th>connection</th><th>pending</th><th>oldest pending</th>` +
    `<th>drained in the last minute</th></tr></thead><tbody>${rows.join('')}</tbody></table></div>`
  );
}

function automationsHtml(a: AutomationEndpointsView): string {
  if (a.error) {
    return `<p class="error" data-testid="automations">Could not read the endpoints: ${escapeHtml(a.error)}</p>`;
  }
  if (a.endpoints.length === 0) {
    return `<p data-testid="automations">None: <code>ebsync webhooks endpoints add</code> adds one.</p>`;
  }
  const rows = a.endpoints.map((e) => {
    const name = escapeHtml(e.name);
    const badge =
      e.state === 'active' ? 'active' : e.state === 'breaker open' ? 'paused' : 'failed';
    const detail =
      e.state === 'breaker open'
        ? `until ${when(Date.parse(e.openUntil ?? ''))}`
        : escapeHtml(e.disabledReason ?? '');
    const only = (label: string, items: string[]) =>
      `${label} ${items.length === 0 ? 'all' : escapeHtml(items.join(', '))}`;
    return (
      `<tr data-testid="endpoint-${name}" data-state="${escapeHtml(e.state)}"><td>${name}</td><td>${escapeHtml(e.url)}</td>` +
      `<td><span class="badge ${badge}">${escapeHtml(e.state)}</span> ${detail}</td><td>${e.failures}</td>` +
      `<td>${only('types', e.filters.resources)}; ${only('actions', e.filters.actions)}; ${only('connections', e.filters.connections)}</td></tr>`
    );
  });
  return (
    `<table data-testid="automations"><thead><tr><th>name</th><th>url</th><th>state</th><th>failures in a row</th>` +
    `<th>sends</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
  );
}

/** The part of the page that refreshes itself. */
export function reportHtml(
  report: StatusReport,
  rates: ReadonlyMap<string, RateSeries>,
  collectError: string | null,
): string {
  const now = report.generatedAt;
  const problems =
    report.problems.length === 0
      ? `<p class="ok" data-testid="health">All healthy.</p>`
      : `<div class="problems" data-testid="health"><b>${report.problems.length} need attention</b><ul>` +
        report.problems.map((p) => `<li>${escapeHtml(p.message)}</li>`).join('') +
        `</ul></div>`;
  const rows = report.connections
    .map((c) => {
      const id = escapeHtml(c.connectionId);
      const toggle = c.state === 'paused' ? 'resume' : 'pause';
      return (
        `<tr data-testid="connection-${id}"><td>${id}</td><td>${escapeHtml(c.businessName ?? '-')}</td>` +
        `<td><span class="badge ${c.state}">${escapeHtml(c.state.replace('_', ' '))}</span></td>` +
        `<td>${escapeHtml(c.kind)}</td><td data-limited="${c.rateLimited.lastHour}">${c.rateLimited.lastHour}</td>` +
        `<td>${escapeHtml(c.lastError ?? '')}</td>` +
        `<td><a href="${escapeHtml(c.uiUrl)}" target="_blank" rel="noopener">workflow</a></td>` +
        `<td>${actionButton('sync', 'connection', c.connectionId, 'Sync now')} ` +
        `${actionButton(toggle, 'connection', c.connectionId, toggle === 'pause' ? 'Pause' : 'Resume')}</td></tr>`
      );
    })
    .join('');
  return [
    collectError ? `<p class="error">Could not refresh: ${escapeHtml(collectError)}</p>` : '',
    problems,
    `<h2>Connections (${report.connections.length})</h2>`,
    report.connections.length === 0
      ? '<p>None yet: <code>ebsync connect</code> adds one.</p>'
      : `<table><thead><tr><th>id</th><th>business</th><th>state</th><th>kind</th><th>429s (1h)</th><th>last error</th><th></th><th>actions</th></tr></thead><tbody>${rows}</tbody></table>` +
        `<p data-testid="limited-total" data-count="${report.rateLimitedLastHour}">429s last hour (rate-limit refusals, all connections): <b>${report.rateLimitedLastHour}</b></p>`,
    `<h2>Mirrors (${report.mirrors.length})</h2>`,
    report.mirrors.length === 0
      ? '<p>None yet: <code>ebsync sync</code> or “Sync now” starts one.</p>'
      : report.mirrors
          .map((m) =>
            mirrorBlock(
              m,
              rates.get(m.workflowId) ?? [],
              now,
              report.connections.find((c) => c.connectionId === m.connectionId),
            ),
          )
          .join(''),
    `<h2>Destinations</h2>`,
    report.destinations.length === 0
      ? '<p>None yet.</p>'
      : `<ul>${report.destinations.map((d) => `<li>${escapeHtml(d)}</li>`).join('')}</ul>`,
    `<h2>Schedules (${report.schedules.length})</h2>`,
    schedulesHtml(report.schedules),
    `<h2>Webhook receiver</h2>`,
    webhooksHtml(report.webhooks, now),
    `<h2>Webhook inbox</h2>`,
    inboxHtml(report.inbox, now),
    `<h2>Automation endpoints (${report.automations.endpoints.length})</h2>`,
    automationsHtml(report.automations),
    `<p class="meta">Updated ${when(now)} · namespace ${escapeHtml(report.temporal.namespace)}, task queue ${escapeHtml(report.temporal.taskQueue)}</p>`,
  ].join('\n');
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1f2328;max-width:1100px}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #d0d7de;padding:4px 6px;text-align:left}
.badge{padding:1px 6px;border-radius:8px;background:#ddf4ff}.badge.active,.badge.completed{background:#dafbe1}
.badge.needs_reauth,.badge.failed,.badge.terminated,.badge.timed_out{background:#ffebe9}.badge.paused,.badge.canceled{background:#fff8c5}
.bar{height:10px;background:#eaeef2;border-radius:5px;overflow:hidden;margin:4px 0}.bar div{height:100%;background:#2da44e}
.mirror{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;margin:8px 0}.pass{margin:6px 0}
div.paused{color:#9a6700}.error,.problems{color:#cf222e}.ok{color:#1a7f37}.meta{color:#57606a;font-size:12px}
.charts{display:flex;gap:16px;flex-wrap:wrap}.chart-box{font-size:12px;color:#57606a}
#admin{float:right}#action-result{min-height:1.4em}`;

/** Stands in for the report until the first one has been gathered from Temporal. */
export function loadingHtml(): string {
  return `<p class="meta" data-loading data-testid="loading">Reading the status from Temporal…</p>`;
}

/**
 * The page's one script: the token field, the report's refresh and the action buttons. It is
 * allowed by its hash in the page's Content-Security-Policy, so no other script can run,
 * inline handlers included.
 */
const PAGE_SCRIPT = `
const token = document.getElementById('token');
token.value = sessionStorage.getItem('ebsync-admin-token') || '';
token.addEventListener('input', () => sessionStorage.setItem('ebsync-admin-token', token.value));
document.getElementById('admin').addEventListener('submit', (event) => event.preventDefault());
const result = document.getElementById('action-result');
async function refresh() {
  const report = document.getElementById('report');
  try {
    const res = await fetch('fragment', { cache: 'no-store' });
    if (res.ok) report.innerHTML = await res.text();
    else if (report.querySelector('[data-loading]')) {
      const body = await res.json().catch(() => ({}));
      report.querySelector('[data-loading]').textContent = body.message || res.statusText;
      report.querySelector('[data-loading]').className = 'error';
    }
  } catch {}
}
if (document.querySelector('[data-loading]')) refresh();
setInterval(refresh, 2000);
document.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-action]');
  if (!button) return;
  const headers = token.value ? { authorization: 'Bearer ' + token.value } : {};
  const res = await fetch(button.dataset.path, { method: 'POST', headers });
  const body = await res.json().catch(() => ({}));
  result.textContent = res.ok ? body.message : 'Refused (' + res.status + '): ' + (body.message || res.statusText);
  result.className = res.ok ? 'ok' : 'error';
  refresh();
});
`;

/**
 * What the page may load and run: its own script (by hash) and styles, fetches to its own
 * origin; no frames around it, no plugins, no forms sent anywhere. Inline styles stay allowed
 * (the progress bars' widths); every value in the page is escaped.
 */
export const PAGE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src 'sha256-${createHash('sha256').update(PAGE_SCRIPT).digest('base64')}'`,
  "style-src 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The page: the report plus a token field for the actions. The token stays in this tab
 * (sessionStorage) and goes only into the Authorization header of an action's request.
 */
export function pageHtml(body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ebsync status</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>${STYLE}</style></head>
<body>
<form id="admin"><label>Admin token <input id="token" type="password" autocomplete="off"></label></form>
<h1>ebsync status</h1>
<p id="action-result" data-testid="action-result" role="status"></p>
<main id="report">${body}</main>
<script>${PAGE_SCRIPT}</script>
</body></html>`;
}
