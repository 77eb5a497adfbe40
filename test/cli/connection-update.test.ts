import {
  WorkflowNotFoundError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { updateOnceAnswered } from '../../cli/connection-update.js';

/**
 * The one order of steps behind every update to a connection's workflow (`ebsync connections
 * pause|resume`, `ebsync connect` again, the status page's pause and resume): the status query
 * first, the update only once a worker answered it. Against a stand-in client, so each way a
 * worker can fail to answer is certain.
 */

/** A client whose query does what `query` does, and which records what was asked of it. */
function standIn(query: () => Promise<unknown>): { client: Client; calls: string[] } {
  const calls: string[] = [];
  const client = {
    withDeadline: <R>(_deadline: number, fn: () => Promise<R>): Promise<R> => fn(),
    workflow: {
      getHandle: (workflowId: string) => ({
        query: () => {
          calls.push(`query ${workflowId}`);
          return query();
        },
      }),
    },
  } as unknown as Client;
  return { client, calls };
}

/** The server's answer to a query whose workflow's worker went away. */
const noPoller = (): Error =>
  Object.assign(new Error('9 FAILED_PRECONDITION: no poller seen'), {
    code: 9,
    details: 'no poller seen for task queue recently, worker may be down',
    metadata: {},
  });

const say = {
  unanswered: () => new Error('unanswered: nothing was sent'),
  kept: () => new Error('kept: the request is kept'),
};

describe('an update to a connection, sent once a worker answered', () => {
  it('sends nothing when no worker answers the status query, and says so', async () => {
    const { client, calls } = standIn(() => Promise.reject(noPoller()));
    let sent = false;
    const update = (): Promise<string> => {
      sent = true;
      return Promise.resolve('done');
    };
    await expect(updateOnceAnswered(client, 'connection-a', 0, update, say)).rejects.toThrow(
      'unanswered: nothing was sent',
    );
    expect(calls).toEqual(['query connection-a']);
    expect(sent).toBe(false);
  });

  it('says the request is kept when the update was sent and no worker took it in time', async () => {
    const { client, calls } = standIn(() => Promise.resolve({ state: 'active' }));
    const update = (): Promise<string> => {
      calls.push('update');
      return Promise.reject(new WorkflowUpdateRPCTimeoutOrCancelledError('cut at the deadline'));
    };
    await expect(updateOnceAnswered(client, 'connection-a', 0, update, say)).rejects.toThrow(
      'kept: the request is kept',
    );
    expect(calls).toEqual(['query connection-a', 'update']);
  });

  it("answers with the update's result once both were answered, the query first", async () => {
    const { client, calls } = standIn(() => Promise.resolve({ state: 'active' }));
    const update = (): Promise<string> => {
      calls.push('update');
      return Promise.resolve('paused');
    };
    await expect(updateOnceAnswered(client, 'connection-a', 10_000, update, say)).resolves.toBe(
      'paused',
    );
    expect(calls).toEqual(['query connection-a', 'update']);
  });

  it('passes any other failure on as it is (a workflow that ended is said by the caller)', async () => {
    const gone = new WorkflowNotFoundError('not found', 'connection-a', undefined);
    const { client } = standIn(() => Promise.reject(gone));
    await expect(
      updateOnceAnswered(client, 'connection-a', 10_000, () => Promise.resolve('x'), say),
    ).rejects.toBe(gone);
  });
});
