import { describe, expect, it } from 'vitest';
import { DestinationPausedError } from '../../destinations/errors.js';
import { DestinationClaimedError } from '../../store/errors.js';
import { DESTINATION_CLAIMED, DESTINATION_PAUSED } from '../../workflows/mirror-types.js';

// Workflows cannot import the error classes (activities' dependencies stay out of the sandbox),
// so they tell failures apart by the type the activity's failure carries: the class's name.
// A renamed class would make the drain and the pass misread the failure without a type error.
describe('the failure types workflows read', () => {
  it("are the names of the activities' error classes", () => {
    expect(new DestinationPausedError('spent', '2026-12-08T00:00:00.000Z').name).toBe(
      DESTINATION_PAUSED,
    );
    expect(new DestinationClaimedError('sqlite:a.db', 'b', ['a']).name).toBe(DESTINATION_CLAIMED);
  });
});
