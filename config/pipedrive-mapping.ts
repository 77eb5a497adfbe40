import { z } from 'zod';
import { crmMappingSetting, eventStageMap } from './json-setting.js';

/**
 * Overrides of the Pipedrive field mapping (EBSYNC_PIPEDRIVE_MAPPING). Each `fields` object
 * maps a Pipedrive field (a standard one, or a custom field's 40-character key) to a column of
 * the mirrored table (docs/mirror.md, Tables), or to null to stop writing a default field.
 */
const fieldName = z.string().regex(/^([a-z][a-z_]{0,62}|[0-9a-f]{40})$/, {
  error: 'expected a Pipedrive field name or a custom field key (40 hex digits)',
});
const columnName = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,62}$/, { error: 'expected a column name of the mirrored table' });
const fields = z.record(fieldName, columnName.nullable());
const onDelete = z.enum(['delete', 'keep'], { error: 'expected delete or keep' });
const dealStatus = z.enum(['open', 'won', 'lost'], { error: 'expected open, won or lost' });

export const pipedriveMappingSchema = z.strictObject({
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/, { error: 'expected a 3-letter currency code' })
    .optional(),
  leads: z
    .strictObject({
      person: fields.optional(),
      deal: fields.optional(),
      /** false: a lead becomes a person only. */
      createDeal: z.boolean().optional(),
      onDelete: onDelete.optional(),
    })
    .optional(),
  events: z
    .strictObject({
      deal: fields.optional(),
      status: eventStageMap(dealStatus).optional(),
      onDelete: onDelete.optional(),
    })
    .optional(),
});
export type PipedriveMappingOverrides = z.output<typeof pipedriveMappingSchema>;

export const pipedriveMappingSetting = crmMappingSetting(pipedriveMappingSchema);
