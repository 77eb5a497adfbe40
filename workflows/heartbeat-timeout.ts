/**
 * The heartbeat timeout of the activities that say they are alive while they run
 * (activities/heartbeats.ts, beatingWhileAlive): how long Temporal waits to hand the attempt
 * of a worker that died (SIGKILL, a lost machine) to another. Those activities beat every 2 s,
 * and the SDK sends the latest beat once per 80 % of this (16 s): a live one is timed out only
 * if a beat takes more than the 4 s left to reach the server. The drain keeps a minute (its
 * sessions may last 45 s; workflows/drain.ts).
 */
export const ALIVE_HEARTBEAT_TIMEOUT = '20 seconds';
