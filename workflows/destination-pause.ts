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
