import { WorkflowNotFoundError, type Client } from '@temporalio/client';

/**
 * The newest run of workflow `workflowId` as the server has it now (not Temporal's list, which
 * lags behind), or null when there is none.
 */
export async function describeWorkflow(client: Client, workflowId: string) {
  try {
    return await client.workflow.getHandle(workflowId).describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
}
