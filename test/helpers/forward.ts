import { randomBytes } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import {
  createAutomationActivities,
  type ForwardInput,
  type ForwardOutput,
} from '../../activities/automations/forward-change.js';
import type { AutomationEndpoint, AutomationStore } from '../../store/automation-endpoints.js';

/** An endpoint as `webhooks endpoints add` makes it: every change, enabled. */
export function endpointAt(name: string, url: string): AutomationEndpoint {
  return {
    name,
    url,
    secret: `whsec_${randomBytes(24).toString('base64')}`,
    filters: { resources: [], actions: [], connections: [] },
    createdAt: new Date().toISOString(),
    disabledAt: null,
    disabledReason: null,
  };
}

/** One run of the forwarding activity for a written lead, in Temporal's activity environment. */
export function forwardOnce(store: AutomationStore, webhookId: string): Promise<ForwardOutput> {
  const activities = createAutomationActivities(store);
  const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
  const input: ForwardInput = {
    webhookId,
    connectionId: 'shop',
    resource: 'leads',
    recordId: '1',
    action: 'written',
    record: { email: 'ann@example.com' },
    appliedAt: new Date().toISOString(),
  };
  return env.run((given: ForwardInput) => activities.forwardChange(given), input);
}
