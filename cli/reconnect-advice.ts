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
