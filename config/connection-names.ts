/**
 * What a connection may be called: the one rule of `ebsync connect --name`, every command's
 * `--connection`, the webhook receiver's `/webhooks/{connection}` and the status page's
 * routes. A name is part of workflow ids, URLs and file names, so it is checked before it
 * is used anywhere; one that breaks the rule names no connection there could ever be.
 */
export const CONNECTION_RULE = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** The rule in words, as messages say what was expected. */
export const CONNECTION_RULE_TEXT =
  "1-63 lowercase letters, digits, '-' or '_', the first a letter or digit";

/**
 * Names `ebsync connections` reads as its own subcommands: a connection called so could not be
 * shown by it, so `ebsync connect` gives no new connection these names.
 */
export const CONNECTIONS_SUBCOMMANDS = ['pause', 'resume'] as const;

export function isConnectionName(name: string): boolean {
  return CONNECTION_RULE.test(name);
}
