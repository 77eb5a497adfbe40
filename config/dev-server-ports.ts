/**
 * Where `ebsync temporal` and `ebsync dev` put the dev server's web UI when `--ui-port` is not
 * given: its gRPC port + 1000 (7233 → 8233, the Temporal CLI's own pair). One rule, read both by
 * the commands that start the server and by the UI link's default, so the two cannot drift.
 */
const DEV_UI_PORT_OFFSET = 1000;

/** The UI port for a dev server on `port`, or undefined when port + 1000 is past 65535. */
export function devUiPort(port: number): number | undefined {
  const ui = port + DEV_UI_PORT_OFFSET;
  return ui <= 65_535 ? ui : undefined;
}

/** Where every command looks for Temporal while TEMPORAL_ADDRESS is unset. */
export const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';

/**
 * A host as a `host:port` address or a URL writes it: an IPv6 address in brackets
 * (`::1` → `[::1]`), any other host as it is.
 */
export function addressHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** The host of an address or URL without its brackets (`[::1]` → `::1`), to connect or compare. */
export function bareHost(host: string): string {
  return host.replace(/^\[(.*)\]$/, '$1');
}
