// The command that gives a connection new credentials is the connection workflow's contract
// too: its needs-reauth warning names it.
export { reconnectCommand } from '../workflows/connection-types.js';

/** A word as a POSIX shell reads it back unchanged: quoted unless it is plain. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * The command that runs a mirror again: its connection and destination named, since a bare
 * `ebsync sync` runs the default destination's mirror (and names no connection when there
 * are several). A Postgres destination is shown without its login (`postgres://***@…`): the
 * command asks for it in its place.
 */
export function syncAgainCommand(connectionId: string, destination: string | null): string {
  const command = `ebsync sync --connection ${shellWord(connectionId)}`;
  if (destination === null) return command;
  const to = destination.replace(/^(postgres(?:ql)?:\/\/)\*\*\*@/, '$1USER:PASSWORD@');
  return `${command} --to ${shellWord(to)}`;
}
