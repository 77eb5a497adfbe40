import { PipedriveClient, type PipedriveClientOptions } from './pipedrive-client.js';
import { PIPEDRIVE_EVENT_FIELD, PIPEDRIVE_LEAD_FIELD } from './pipedrive-mapping.js';

export interface PipedriveSetupLine {
  field: string;
  /** The field's 40-character key, by which deals carry its value. */
  key: string;
  outcome: 'created' | 'exists';
}

/**
 * Deal field name → key. https://developers.pipedrive.com/docs/api/v1/DealFields — the list
 * (v1) gives every field with its `key`: a 40-character hash for custom fields.
 */
export async function dealFieldKeys(client: PipedriveClient): Promise<Map<string, string>> {
  const fields = await client.data<{ name: string; key: string }[] | null>(
    'GET',
    '/v1/dealFields',
    {
      searchParams: { start: '0', limit: '500' },
    },
  );
  return new Map((fields ?? []).map((f) => [f.name, f.key]));
}

/**
 * Creates the deal custom fields the Pipedrive destination finds its deals by, and reports
 * their keys. Safe to run again: a field that exists is left as it is.
 */
export async function setupPipedrive(
  options: PipedriveClientOptions,
): Promise<PipedriveSetupLine[]> {
  const client = new PipedriveClient(options);
  const existing = await dealFieldKeys(client);
  const lines: PipedriveSetupLine[] = [];
  for (const field of [PIPEDRIVE_LEAD_FIELD, PIPEDRIVE_EVENT_FIELD]) {
    const key = existing.get(field);
    if (key) {
      lines.push({ field, key, outcome: 'exists' });
      continue;
    }
    // https://developers.pipedrive.com/docs/api/v1/DealFields#addDealField — a `varchar`
    // field is searchable by the deal search's custom_fields.
    const made = await client.data<{ key: string }>('POST', '/v1/dealFields', {
      json: { name: field, field_type: 'varchar' },
    });
    lines.push({ field, key: made.key, outcome: 'created' });
  }
  return lines;
}
