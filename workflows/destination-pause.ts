import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { DESTINATION_PAUSED, type MirrorCounts } from './mirror-types.js';

/**
 * The reset time of a destination that paused the pass (or a drain's batch), if that is
 * what `err` says, and what the paused activity had counted until then (`passCounts`: absent
 * from workers before it was said).
 */
export function destinationPause(
  err: unknown,
): { resumeAt: string; passCounts: Partial<MirrorCounts> | undefined } | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof ApplicationFailure) || cause.type !== DESTINATION_PAUSED) return undefined;
  const details = cause.details?.[0] as { resumeAt?: unknown; passCounts?: unknown } | undefined;
  return {
    resumeAt: typeof details?.resumeAt === 'string' ? details.resumeAt : 'the reset',
    passCounts:
      typeof details?.passCounts === 'object' && details.passCounts !== null
        ? details.passCounts
        : undefined,
  };
}

/**
 * How long a batch a destination paused waits before it is tried again: until `resumeAt`,
 * but at least `floorMs` (a reset already past by this clock and not by the service's, or a
 * reset time not said, is not tried again at once and again) and at most `capMs` (an allowance
 * raised meanwhile, a plan upgraded, is seen within that).
 */
export function waitForResetMs(
  resumeAt: string,
  now: number,
  bounds: { floorMs: number; capMs: number },
): number {
  const untilReset = Date.parse(resumeAt) - now;
  const wait = Number.isNaN(untilReset) ? bounds.floorMs : Math.max(bounds.floorMs, untilReset);
  return Math.min(bounds.capMs, wait);
}
