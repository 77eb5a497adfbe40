import { z } from 'zod';

/**
 * A setting given as JSON text (an environment variable) or as the value itself (a config
 * file): the value, or undefined when the text is not JSON.
 */
export function jsonSettingValue(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A CRM mapping setting (EBSYNC_<CRM>_MAPPING): JSON text (environment) or an object (config
 * file), checked against `schema`; the first problem is named with its path.
 */
export function crmMappingSetting<Schema extends z.ZodType>(schema: Schema) {
  // Any value reaches the schema, so a config file's array or number is named as such.
  return z.unknown().transform((value, ctx) => {
    const parsed = jsonSettingValue(value);
    if (parsed === undefined) {
      ctx.addIssue({ code: 'custom', message: 'expected a JSON object (see docs/crm.md)' });
      return z.NEVER;
    }
    const result = schema.safeParse(parsed);
    if (!result.success) {
      const issue = result.error.issues[0];
      const where = issue?.path.map(String).join('.') ?? '';
      ctx.addIssue({
        code: 'custom',
        message: `${where ? `${where}: ` : ''}${issue?.message ?? 'not a mapping'} (see docs/crm.md)`,
      });
      return z.NEVER;
    }
    return result.data;
  });
}

/**
 * A key of a CRM's event stage (or deal status) map: an event status the service has, the
 * `canceled` and `completed` flags (destinations/crm-fields.ts, eventStageKey), or `*` for any
 * other. A key none of these is refused, as it would never match (a typo such as `cancelled`).
 */
export const EVENT_STAGE_KEYS = [
  'proposal',
  'proposal_date_reserved',
  'confirmed',
  'canceled',
  'completed',
  '*',
] as const;

/** The map from EVENT_STAGE_KEYS to a CRM's values, refusing any other key in one line. */
export function eventStageMap<Value extends z.ZodType>(value: Value) {
  const known = new Set<string>(EVENT_STAGE_KEYS);
  return z.record(z.string(), value).superRefine((map, ctx) => {
    const unknown = Object.keys(map).find((key) => !known.has(key));
    if (unknown === undefined) return;
    ctx.addIssue({
      code: 'custom',
      path: [unknown],
      message: `expected an event status (${EVENT_STAGE_KEYS.join(', ')})`,
    });
  });
}
