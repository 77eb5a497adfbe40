import { z } from 'zod';
import { crmMappingSetting, eventStageMap } from './json-setting.js';

/**
 * Overrides of the Salesforce field mapping (EBSYNC_SALESFORCE_MAPPING). Each `fields` object
 * maps a Salesforce field's API name (standard, or custom ending in __c) to a column of the
 * mirrored table (docs/mirror.md, Tables), or to null to stop writing a default field.
 */
const fieldName = z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/, {
  error: 'expected a Salesforce field API name (letters, digits, _; custom fields end in __c)',
});
const columnName = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,62}$/, { error: 'expected a column name of the mirrored table' });
const fields = z.record(fieldName, columnName.nullable());
const onDelete = z.enum(['delete', 'keep'], { error: 'expected delete or keep' });

export const salesforceMappingSchema = z.strictObject({
  leads: z
    .strictObject({
      lead: fields.optional(),
      onDelete: onDelete.optional(),
    })
    .optional(),
  events: z
    .strictObject({
      opportunity: fields.optional(),
      /** Event status → Opportunity StageName (a value of the org's stage picklist). */
      stages: eventStageMap(z.string().min(1)).optional(),
      /** Role of a contact linked to an Opportunity (OpportunityContactRole.Role). */
      contactRole: z.string().min(1).optional(),
      onDelete: onDelete.optional(),
    })
    .optional(),
});
export type SalesforceMappingOverrides = z.output<typeof salesforceMappingSchema>;

export const salesforceMappingSetting = crmMappingSetting(salesforceMappingSchema);
