import { shownSafely } from './shown-text.js';

/**
 * `--cron` and `--timezone`, checked before Temporal is asked: the server answers a bad
 * expression or zone with its own text ("CronString does not have 5-7 fields", "unknown time
 * zone europe/berlin"), which names neither the field nor what is allowed. ebsync takes
 * exactly what docs/schedules.md says: five fields, each a list of `*`, numbers or names and
 * ranges, with an optional `/step` (the part of Temporal's cron reader that a five-field
 * expression uses). Seconds and year fields, `@daily`, `@every 5m`, `TZ=` and `#` comments,
 * which Temporal also reads, are refused: one form, documented, with --every for intervals.
 * Whether the expression ever fires is Temporal's to say (its next action times).
 */

interface CronField {
  name: string;
  min: number;
  max: number;
  /** Names a field also takes (January…December, Sunday…Saturday), numbered from `min`. */
  names?: readonly string[];
}

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const DAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

const FIELDS: readonly CronField[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  // 7 is Sunday as well as 0, as most cron readers (Temporal's among them) take it.
  { name: 'day of week', min: 0, max: 7, names: DAYS },
];

/** The one form taken, named in every refusal of the expression's shape. */
export const CRON_FORM =
  "five fields, 'minute hour day-of-month month day-of-week', such as '0 3 * * *'";

function allowed(field: CronField): string {
  const names = field.names
    ? ` or ${field.names[0]!.slice(0, 3).toUpperCase()}-${field.names[field.names.length - 1]!.slice(0, 3).toUpperCase()}`
    : '';
  return `${field.min}-${field.max}${names}`;
}

/**
 * A value's number, or why it is not one the field takes. Names as Temporal reads them: at
 * least three letters of one, in any case (`MON`, `Mon`, `monday`).
 */
function valueOf(field: CronField, text: string): number | string {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < field.min || value > field.max) {
      return `${value} is out of range (allowed: ${allowed(field)})`;
    }
    return value;
  }
  const lower = text.toLowerCase();
  const named =
    lower.length >= 3 && /^[a-z]+$/.test(lower)
      ? (field.names?.findIndex((n) => n.startsWith(lower)) ?? -1)
      : -1;
  if (named >= 0) return named + field.min;
  return `'${text}' is not a number${field.names ? ' or a name' : ''} it takes (allowed: ${allowed(field)}, '*', ranges a-b, lists a,b, each with an optional /step)`;
}

/** Why one field's text is not one Temporal reads, or undefined when it is. */
function fieldProblem(field: CronField, text: string): string | undefined {
  for (const part of text.split(',')) {
    const [range = '', step, ...more] = part.split('/');
    if (more.length > 0 || (step !== undefined && !/^\d+$/.test(step))) {
      return `its step '${part}' is not a number after one '/'`;
    }
    if (step !== undefined && Number(step) === 0) return `its step in '${part}' is 0`;
    if (range === '*') continue;
    const bounds = range.split('-');
    if (bounds.length > 2) return `'${part}' has more than one '-'`;
    const values: number[] = [];
    for (const bound of bounds) {
      const value = valueOf(field, bound);
      if (typeof value === 'string') return value;
      values.push(value);
    }
    if (values.length === 2 && values[1]! < values[0]!) {
      return `the range '${range}' ends before it starts`;
    }
  }
  return undefined;
}

/**
 * Why a cron expression is not the five-field form ebsync takes, or cannot be right, in one
 * line naming the field and what it allows; undefined when it is fine.
 */
export function cronProblem(expression: string): string | undefined {
  const trimmed = expression.trim();
  const fields = trimmed.split(/\s+/);
  if (trimmed.startsWith('@') || fields.length !== FIELDS.length) {
    const count = trimmed === '' ? 0 : fields.length;
    const what = trimmed.startsWith('@')
      ? `'${fields[0]}' is not taken`
      : `it has ${count} field${count === 1 ? '' : 's'}`;
    return `--cron '${shownSafely(expression)}': ${what}; expected ${CRON_FORM} (no seconds or year field, no @daily or @every: --every takes an interval)`;
  }
  for (const [i, field] of FIELDS.entries()) {
    const why = fieldProblem(field, fields[i] ?? '');
    if (why)
      return `--cron '${shownSafely(expression)}': the ${field.name} field (${i + 1} of 5): ${why}`;
  }
  return undefined;
}

/**
 * The values one field's text stands for, read as Temporal reads it: `a/step` runs from `a` to
 * the field's end, and day of week 7 is Sunday (0). The text has passed fieldProblem.
 */
function fieldValues(field: CronField, text: string): Set<number> {
  const values = new Set<number>();
  for (const part of text.split(',')) {
    const [range = '', step] = part.split('/');
    let from = field.min;
    let to = field.max;
    if (range !== '*') {
      const [first = '', last] = range.split('-');
      from = valueOf(field, first) as number;
      to = last !== undefined ? (valueOf(field, last) as number) : step === undefined ? from : to;
    }
    for (let v = from; v <= to; v += Number(step ?? 1))
      values.add(field.max === 7 && v === 7 ? 0 : v);
  }
  return values;
}

/** 2001-2028: the days of week and leap years of 2001-2099 repeat after these 1461 weeks. */
const CYCLE_START = Date.UTC(2001, 0, 1);
const CYCLE_DAYS = 10_227;
const DAY_MS = 86_400_000;

/**
 * The shortest time between two firings of a cron expression (one cronProblem passed), on the
 * clock of its zone, or undefined when no date matches it. Temporal keeps each firing's jitter
 * inside the time to the next firing without a word, as it does an interval's, so a jitter
 * this long or longer would not be the one the schedule shows. The days are those
 * temporalCronExpressions asks for (day of month or day of week when both are restricted).
 * A daylight-saving change can shorten one gap a year by its hour; that firing's delay is the
 * only one Temporal then keeps shorter.
 */
export function cronShortestGapMs(expression: string): number | undefined {
  const texts = expression.trim().split(/\s+/);
  const [minutes, hours, daysOfMonth, months, daysOfWeek] = FIELDS.map((field, i) =>
    fieldValues(field, texts[i] ?? '*'),
  ) as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  const either = !(texts[2] ?? '*').startsWith('*') && !(texts[4] ?? '*').startsWith('*');
  const times = [...hours]
    .flatMap((h) => [...minutes].map((m) => h * 60 + m))
    .sort((a, b) => a - b);
  let shortest = Infinity;
  for (let i = 1; i < times.length; i++) shortest = Math.min(shortest, times[i]! - times[i - 1]!);
  const first = times[0]!;
  const last = times[times.length - 1]!;
  let firstDay: number | undefined;
  let lastDay: number | undefined;
  for (let day = 0; day < CYCLE_DAYS; day++) {
    const date = new Date(CYCLE_START + day * DAY_MS);
    const byMonth = daysOfMonth.has(date.getUTCDate());
    const byWeek = daysOfWeek.has(date.getUTCDay());
    if (!months.has(date.getUTCMonth() + 1) || !(either ? byMonth || byWeek : byMonth && byWeek)) {
      continue;
    }
    if (lastDay !== undefined) shortest = Math.min(shortest, (day - lastDay) * 1440 + first - last);
    firstDay ??= day;
    lastDay = day;
  }
  if (firstDay === undefined || lastDay === undefined) return undefined;
  // From the cycle's last firing to the next cycle's first.
  shortest = Math.min(shortest, (firstDay + CYCLE_DAYS - lastDay) * 1440 + first - last);
  return shortest * 60_000;
}

const ZONE_EXAMPLE = 'an IANA name in its exact case, such as UTC or Europe/Berlin';

/**
 * Why a `--timezone` is not one Temporal's server reads, or undefined. Intl knows the IANA
 * names but reads them in any case (`europe/berlin`), while the server looks a name up in
 * its exact case and refuses any other, and Intl takes UTC offsets (`+01:00`), which are no
 * zone name at all. Intl also turns some aliases into its own canonical name (Asia/Kolkata
 * into Asia/Calcutta, US/Pacific into America/Los_Angeles): an alias is taken as written,
 * since the server knows it too, unless a part of it is the same word as Intl's name in
 * another case, or starts in lower case, as no IANA name's part does.
 */
export function timezoneProblem(zone: string): string | undefined {
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return `--timezone '${zone}' is not a time zone: expected ${ZONE_EXAMPLE}`;
  }
  if (/^[+-]/.test(resolved)) {
    return `--timezone '${zone}' is an offset, not a zone name Temporal reads: expected ${ZONE_EXAMPLE} (Etc/GMT-1 is UTC+01:00)`;
  }
  if (zone === resolved) return undefined;
  const wrongCase =
    zone.toLowerCase() === resolved.toLowerCase() ||
    zone.split('/').some((part, i) => {
      const theirs = resolved.split('/')[i];
      return (
        /^[a-z]/.test(part) ||
        // A word of four letters or more in capitals: no IANA name is written so ('US/PACIFIC',
        // which ICU takes for its canonical 'America/Los_Angeles' and Temporal refuses).
        (/[A-Z]{4,}/.test(part) && part === part.toUpperCase()) ||
        (theirs !== undefined && part !== theirs && part.toLowerCase() === theirs.toLowerCase())
      );
    });
  if (!wrongCase) return undefined;
  return `--timezone '${zone}' is not written as the IANA database writes it, and Temporal reads zone names in their exact case only: write it '${resolved}'`;
}

/** A POSIX TZ of a fixed offset in whole hours and no summer time: `UTC+2`, `<+03>-3`. */
const POSIX_FIXED = /^(?:[A-Za-z]{3,}|<[^>]*>)([+-]?)(\d{1,2})$/;

/**
 * This machine's zone as Temporal reads it (the default of `--timezone`), or why there is
 * none in one line. Intl names no zone for a POSIX TZ such as `UTC+2`, or a wrong one
 * (`<+03>-3` reads as UTC), and UTC in its place would fire hours off without a word. A TZ
 * of a zone file's path is left to Intl, which reads it.
 */
export function localTimezone(): { zone: string } | { problem: string; short: string } {
  const tz = process.env.TZ ?? '';
  const named = tz.startsWith(':') ? tz.slice(1) : tz;
  const resolved = Intl.DateTimeFormat().resolvedOptions().timeZone as string | undefined;
  const known = resolved !== undefined && resolved !== '' && resolved !== 'Etc/Unknown';
  if (known && (named === '' || named.startsWith('/') || timezoneProblem(named) === undefined)) {
    return { zone: resolved };
  }
  // An empty TZ is UTC to the C library, and Node's own clock reads it so; ICU names it unknown.
  if (named === '' && process.env.TZ !== undefined) return { zone: 'UTC' };
  const fixed = POSIX_FIXED.exec(named);
  // POSIX counts west of Greenwich as positive, as the Etc/GMT names do: UTC+2 is UTC-02:00.
  const hours = fixed ? Number(fixed[2]) * (fixed[1] === '-' ? -1 : 1) : undefined;
  const same =
    hours !== undefined && hours >= -14 && hours <= 12
      ? ` (Etc/GMT${hours <= 0 ? '-' : '+'}${Math.abs(hours)} is the fixed offset it means, UTC${hours <= 0 ? '+' : '-'}${String(Math.abs(hours)).padStart(2, '0')}:00)`
      : '';
  const which = named === '' ? '' : ` (TZ '${shownSafely(tz)}')`;
  const short = `this machine's time zone${which} is not an IANA zone name`;
  return {
    short,
    problem: `${short}, which Temporal needs to fire a cron: give --timezone, such as Europe/Berlin${same}, or set TZ to an IANA name`,
  };
}

/**
 * The cron expressions to give Temporal for one `--cron`. crontab(5) runs a command whose day
 * of month and day of week are both restricted (neither begins with `*`) on a day that
 * matches either; Temporal's reader matches every field, so '0 3 1 * mon' would run only on
 * a 1st that is a Monday, a few times a year. Such an expression goes as two, one per day
 * field, whose times Temporal joins: the days crontab(5) means. Otherwise it goes as it is
 * (with a `*` in either field, both readers ask for both).
 */
export function temporalCronExpressions(expression: string): string[] {
  const [minute, hour, dayOfMonth, month, dayOfWeek] = expression.trim().split(/\s+/);
  if (dayOfMonth === undefined || dayOfWeek === undefined) return [expression];
  if (dayOfMonth.startsWith('*') || dayOfWeek.startsWith('*')) return [expression];
  return [
    `${minute} ${hour} ${dayOfMonth} ${month} *`,
    `${minute} ${hour} * ${month} ${dayOfWeek}`,
  ];
}
