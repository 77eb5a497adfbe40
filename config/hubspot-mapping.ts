import { z } from 'zod';
import { jsonSettingValue } from './json-setting.js';

/**
 * Overrides of the HubSpot field mapping (EBSYNC_HUBSPOT_MAPPING). Each `properties` object
 * maps a HubSpot property name to a column of the mirrored table (docs/mirror.md, Tables), or to null
 * to stop writing a default property; stages map an event status to a deal-stage id.
 */
const propertyName = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,99}$/, { error: 'expected a HubSpot property name (a-z, 0-9, _)' });
const columnName = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,62}$/, { error: 'expected a column name of the mirrored table' });
const properties = z.record(propertyName, columnName.nullable());
const onDelete = z.enum(['archive', 'keep'], { error: 'expected archive or keep' });

export const hubspotMappingSchema = z.strictObject({
  pipeline: z.string().min(1).optional(),
  leads: z
    .strictObject({
      contact: properties.optional(),
      deal: properties.optional(),
      dealStage: z.string().min(1).optional(),
      onDelete: onDelete.optional(),
    })
    .optional(),
  events: z
    .strictObject({
      deal: properties.optional(),
      stages: z.record(z.string().min(1), z.string().min(1)).optional(),
      onDelete: onDelete.optional(),
    })
    .optional(),
});
export type HubSpotMappingOverrides = z.output<typeof hubspotMappingSchema>;

/** The setting as JSON text (environment) or an object (config file), checked here. */
export const hubspotMappingSetting = z
  .union([z.string(), z.record(z.string(), z.unknown())])
  .transform((value, ctx) => {
    const parsed = jsonSettingValue(value);
    if (parsed === undefined) {
      ctx.addIssue({ code: 'custom', message: 'expected a JSON object (see docs/crm.md)' });
      return z.NEVER;
    }
    const result = hubspotMappingSchema.safeParse(parsed);
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
