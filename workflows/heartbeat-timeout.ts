/**
 * The heartbeat timeout of the activities that say they are alive while they run
 * (activities/heartbeats.ts, beatingWhileAlive): how long Temporal waits to hand the attempt
 * of a worker that died (SIGKILL, a lost machine) to another. Those activities beat every 2 s,
 * and the SDK sends at most one beat per 80 % of this, so a live one is never timed out.
 */
export const ALIVE_HEARTBEAT_TIMEOUT = '20 seconds';
