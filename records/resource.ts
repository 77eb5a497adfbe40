/** The mirrored resources, each one table named like the resource: the one list of them. */
export const RESOURCES = [
  'leads',
  'lead_bookings',
  'events',
  'event_bookings',
  'appointments',
] as const;
export type Resource = (typeof RESOURCES)[number];

export function isResource(value: string): value is Resource {
  return (RESOURCES as readonly string[]).includes(value);
}
