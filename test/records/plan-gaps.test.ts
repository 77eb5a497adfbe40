import { describe, expect, it } from 'vitest';
import { gapLines } from '../../records/plan-gaps.js';
import type { PlanGap } from '../../records/partition-plan.js';

const day = (date: string, node: number): PlanGap => ({
  node,
  query: { event_date_start: date, event_date_end: date },
  reason: 'single_day',
  count: 1,
  tried: ['date'],
});

describe('the gap lines of a list', () => {
  it('gives a day over the reach and undated records each their own count and reason', () => {
    // The plan's order: the whole list's undated gap is known first (its parts' totals),
    // the days over the reach later, once their windows are read. Most of the 30 undated
    // bookings came with their leads; 4 records are missing, 2 of them on those two days.
    const gaps: PlanGap[] = [
      { node: 0, query: {}, reason: 'undated', count: 30, tried: ['date'] },
      day('2026-06-13', 7),
      day('2026-11-08', 9),
    ];
    expect(gapLines('lead_bookings', gaps, 4, 120)).toEqual([
      'lead_bookings: 1 unreachable in event_date_start=2026-06-13, event_date_end=2026-06-13: one day holds more than the reach, and a day cannot be cut (tried date windows)',
      'lead_bookings: 1 unreachable in event_date_start=2026-11-08, event_date_end=2026-11-08: one day holds more than the reach, and a day cannot be cut (tried date windows)',
      'lead_bookings: 2 unreachable in the whole list: they have no date, so no date window holds them (tried date windows)',
    ]);
  });
});
