/**
 * The command that gives a connection new credentials. An integration key's connection takes
 * a new key (`--api-key`); `ebsync connect --name` alone runs an installed app's browser
 * flow, which for a key's connection would replace the key by an app install the user may not
 * have (no client id) or want.
 */
export function reconnectCommand(connectionId: string, kind: string | undefined): string {
  return kind === 'integration_key'
    ? `ebsync connect --api-key --name ${connectionId}`
    : `ebsync connect --name ${connectionId}`;
}

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
