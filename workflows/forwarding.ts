import type { ActivityOptions } from '@temporalio/workflow';

/**
 * How changes are forwarded to automation endpoints: a few hours of backoff, then the change
 * is given up for that endpoint (the delivery log says so); the breaker keeps a dead endpoint
 * from being hammered meanwhile.
 */
export const FORWARDING: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '5 minutes',
    backoffCoefficient: 2,
    maximumAttempts: 30,
  },
};
