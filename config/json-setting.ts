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
  return z.union([z.string(), z.record(z.string(), z.unknown())]).transform((value, ctx) => {
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
