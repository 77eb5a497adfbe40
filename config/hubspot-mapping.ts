import { z } from 'zod';
import { crmMappingSetting, eventStageMap } from './json-setting.js';

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
      stages: eventStageMap(z.string().min(1)).optional(),
      onDelete: onDelete.optional(),
    })
    .optional(),
});
export type HubSpotMappingOverrides = z.output<typeof hubspotMappingSchema>;

/** The setting as JSON text (environment) or an object (config file), checked here. */
export const hubspotMappingSetting = crmMappingSetting(hubspotMappingSchema);
