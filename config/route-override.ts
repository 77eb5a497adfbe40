/**
 * The shape of one route override (EBS_ROUTE_OVERRIDES): `"METHOD /api/v1/path"`. Checked
 * here when the settings load; whether the route it names exists, may be overridden and keeps
 * its placeholders is api/'s to say (api/routes.ts, withRouteOverrides), from its route table.
 */

export const OVERRIDE_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type OverrideMethod = (typeof OVERRIDE_METHODS)[number];

/** A route id as the table names them: `resource.operation` (`leadBookings.update`). */
export const ROUTE_ID = /^[A-Za-z][A-Za-z0-9]*\.[A-Za-z][A-Za-z0-9]*$/;

/**
 * An override is resolved against the configured base URL, where `//host/...`, `..`, `%2e`
 * or `\\` would lead the request, credentials included, off the service: only plain
 * segments below /api/v1/ are allowed.
 */
function isServicePath(path: string): boolean {
  const segments = path.split('/');
  if (segments[0] !== '' || segments[1] !== 'api' || segments[2] !== 'v1') return false;
  const below = segments.slice(3);
  return (
    below.length > 0 &&
    below.every(
      (segment) =>
        /^(?:[A-Za-z0-9_.~-]|\{\w+\})+$/.test(segment) && segment !== '.' && segment !== '..',
    )
  );
}

/** The method and path of route `id`'s override, or the one line that says what is wrong. */
export function parseRouteOverride(
  id: string,
  spec: string,
): { method: OverrideMethod; path: string } | { problem: string } {
  const match = /^([A-Z]+)\s+(\/\S*)$/.exec(spec.trim());
  const method = OVERRIDE_METHODS.find((m) => m === match?.[1]);
  if (!match?.[2] || method === undefined) {
    return { problem: `route override for '${id}' must look like 'PATCH /api/v1/path/{id}'` };
  }
  if (!isServicePath(match[2])) {
    return {
      problem: `route override for '${id}' must stay under /api/v1/ (segments of letters, digits, - _ . ~ and {name}), got '${match[2]}'`,
    };
  }
  return { method, path: match[2] };
}
