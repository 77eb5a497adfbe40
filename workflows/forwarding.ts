import type { ActivityOptions } from '@temporalio/workflow';

/**
 * How changes are forwarded to automation endpoints: a few hours of backoff, then the change
 * is given up for that endpoint (the delivery log says so); the breaker keeps a dead endpoint
 * from being hammered meanwhile.
 */
export const FORWARDING: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  // The activities heartbeat per delivery (a request lasts 10 s at most): a worker killed
  // mid-forward has its changes sent by another after this, not after the 2 minutes.
  heartbeatTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '5 minutes',
    backoffCoefficient: 2,
    maximumAttempts: 30,
  },
};
