/** Every permission name the spec uses, plus the two pricing permissions. */
export const PERMISSIONS = [
  'offerings_read',
  'offerings_write',
  'lead_read',
  'lead_write',
  'lead_create',
  'assigned_event_read',
  'unassigned_event_read',
  'assigned_event_write',
  'unassigned_event_write',
  'assigned_event_read_pricing',
  'unassigned_event_read_pricing',
  'assigned_appointment_read',
  'unassigned_appointment_read',
  'assigned_appointment_write',
  'unassigned_appointment_write',
  'appointment_create',
  'availability_read',
  'user_appointment_calendar_read',
  'expense_create',
  'expense_read',
  'expense_write',
  'planning_read',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

const KNOWN = new Set<string>(PERMISSIONS);

export function isPermission(name: string): name is Permission {
  return KNOWN.has(name);
}

export const PRICING_PERMISSIONS = [
  'assigned_event_read_pricing',
  'unassigned_event_read_pricing',
] as const;
