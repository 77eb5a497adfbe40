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

describe('the gap lines of the leads once ids were read one by one', () => {
  // A black-box run: 150 leads under one address past the reach (all found by id), then
  // 60 others past a block of deleted ids the read stopped at. The lines blamed the first
  // address's query for 50 and a list whose every lead was in the mirror for 10.
  const gaps: PlanGap[] = [
    {
      node: 3,
      query: { origin: 'API', text: 'dup.example same person' },
      reason: 'filters_exhausted',
      count: 50,
      tried: ['text'],
    },
    {
      node: 5,
      query: { origin: 'Lead Form' },
      reason: 'filters_exhausted',
      count: 10,
      tried: ['text'],
    },
  ];

  it('no longer splits the rest among the gaps, and says what the read by id did', () => {
    expect(gapLines('leads', gaps, 60, 3843, { after: 2493, probes: 398, found: 358 })).toEqual([
      "leads: 60 of 3843 unreachable: queries held more than the service's reach (origin=API, text=dup.example +2 word(s); origin=Lead Form); reading ids one by one found 358 in 398 reads and stopped after id 2493; which query the rest are in is not known",
    ]);
  });

  it('keeps each gap its count when the read by id found none of them', () => {
    expect(gapLines('leads', gaps, 60, 3843, { after: 40, probes: 20, found: 0 })).toHaveLength(2);
    expect(gapLines('leads', gaps, 60, 3843)[0]).toMatch(/^leads: 50 unreachable in origin=API/);
  });
});
