/**
 * Text given on the command line, as an error line may echo it: apart from cli/errors.ts so
 * that the command definitions (cli/program.ts, loaded by `--version` and `--help`) use it
 * without loading the settings.
 */

/** Longest error line printed: a value given on the command line is echoed in its line. */
const MAX_LINE = 2_000;
/** C0 (but the tab) and C1 control characters, and DEL. */
// eslint-disable-next-line no-control-regex -- control characters are what is escaped
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

/**
 * A line as a terminal may show it: control characters a value brought in (an escape
 * sequence in a --cron, a newline) written as `\xNN`, and a line past MAX_LINE cut.
 */
export function shownSafely(line: string): string {
  const escaped = escapedControls(line, CONTROL);
  return escaped.length <= MAX_LINE
    ? escaped
    : `${escaped.slice(0, MAX_LINE)}… (${escaped.length - MAX_LINE} more characters)`;
}

/** The same control characters but the newline: a report of many lines keeps its lines. */
// eslint-disable-next-line no-control-regex -- control characters are what is escaped
const CONTROL_IN_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * A report for the terminal (status, a schedule, a pass's summary) with the control
 * characters of what it quotes written as `\xNN`: a schedule's note, a file path, a task
 * queue or a service's error text, given by someone else, cannot move the cursor, retitle
 * the window or clear the screen of whoever reads it.
 */
export function printable(text: string): string {
  return escapedControls(text, CONTROL_IN_LINES);
}

function escapedControls(text: string, controls: RegExp): string {
  return text.replace(controls, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * `render(...args)` as a report for the terminal: every string in its arguments (a business
 * name, a service's or a CRM's error text, a schedule's note, a path) has all its control
 * characters written as `\xNN`, the newline too, before the report is made, so that the only
 * lines of the report are its own: a name holding "\n" cannot forge a line of it. What the
 * report adds itself goes through printable() as well.
 */
export function report<A extends unknown[]>(render: (...args: A) => string, ...args: A): string {
  return printable(render(...(quotedValues(args) as A)));
}

/**
 * A copy of `data` with each string, in arrays and plain objects at any depth, on one line:
 * the keys of objects too, since a report may print them (a table of counts by a name someone
 * else chose). Anything else (a Date, a Map) is kept as it is: reports are made of plain data.
 */
function quotedValues(data: unknown): unknown {
  if (typeof data === 'string') return escapedControls(data, CONTROL);
  if (Array.isArray(data)) return data.map(quotedValues);
  if (typeof data !== 'object' || data === null) return data;
  const prototype: unknown = Object.getPrototypeOf(data);
  if (prototype !== Object.prototype && prototype !== null) return data;
  return Object.fromEntries(
    Object.entries(data).map(([key, value]) => [
      escapedControls(key, CONTROL),
      quotedValues(value),
    ]),
  );
}

/**
 * `value` as JSON for a terminal or a program: JSON.stringify writes the C0 control
 * characters as `\u00XX` but leaves DEL and the C1 ones (U+0080 to U+009F; U+009B is a CSI
 * to some terminals) as they are. They are written as `\u00XX` too: the same JSON value, and
 * nothing raw on the screen of whoever runs `--json` without a pipe.
 */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    /[\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
