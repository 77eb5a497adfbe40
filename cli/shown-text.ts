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
  const escaped = line.replace(
    CONTROL,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
  return escaped.length <= MAX_LINE
    ? escaped
    : `${escaped.slice(0, MAX_LINE)}… (${escaped.length - MAX_LINE} more characters)`;
}
