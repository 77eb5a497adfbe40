import { describe, expect, it } from 'vitest';
import {
  asOfNow,
  BAR_CELLS,
  barFraction,
  exitCodeOf,
  progressLine,
  reachLine,
  readText,
  slowedLine,
  summaryText,
} from '../../cli/mirror-summary.js';
import { passLine } from '../../cli/status.js';
import type { PassView } from '../../cli/status-model.js';
import { emptyCounts, etaOf, type MirrorProgress } from '../../workflows/mirror-types.js';

/** A finished pass as the mirror workflow's query answers it. */
function finished(over: Partial<MirrorProgress> = {}): MirrorProgress {
  return {
    connectionId: 'shop',
    destination: 'salesforce',
    mode: 'full',
    subjects: ['leads'],
    phase: 'done',
    passId: 'p#1',
    generation: 1,
    startedAt: 0,
    elapsedMs: 4_000,
    partitions: { total: 1, done: 1 },
    counts: { ...emptyCounts(), read: 100, written: 98, unchanged: 0, refused: 2 },
    gaps: [],
    refusals: [
      'leads 7 refused: DUPLICATES_DETECTED: Use one of these records?',
      'leads 9 refused: REQUIRED_FIELD_MISSING: Required fields are missing: [LastName]',
    ],
    ratePerSecond: 25,
    etaMs: 0,
    error: null,
    ...over,
  };
}

describe('the summary of a pass the destination refused records in', () => {
  it('counts the refused records and names each with its reason', () => {
    const text = summaryText(finished());
    expect(text).toContain(
      '  refused      2 records the destination would not take; the next pass tries them again:\n' +
        '               leads 7 refused: DUPLICATES_DETECTED: Use one of these records?\n' +
        '               leads 9 refused: REQUIRED_FIELD_MISSING: Required fields are missing: [LastName]\n',
    );
    expect(progressLine(finished())).toContain('98 written, 0 unchanged, 0 deleted, 2 refused,');
  });

  it('says how many refused records it does not list, past the lines it keeps', () => {
    const text = summaryText(
      finished({ counts: { ...emptyCounts(), read: 100, written: 95, refused: 5 } }),
    );
    expect(text).toContain(
      '  refused      5 records the destination would not take; the next pass tries them again:\n',
    );
    expect(text).toContain('               and 3 more records refused, not listed\n');
  });

  it('says records written only in part as such, never "0 refused", and exits 3', () => {
    const partly = finished({
      destination: 'hubspot',
      counts: { ...emptyCounts(), read: 100, written: 100, refused: 0 },
      refusals: [
        'leads 4 written in part: VALIDATION_ERROR: Property values were not valid: phone',
      ],
    });
    const text = summaryText(partly);
    expect(text).toContain(
      '  in part      records written only in part; the next pass tries them again:\n' +
        '               leads 4 written in part: VALIDATION_ERROR: Property values were not valid: phone\n',
    );
    expect(text).not.toContain('0 records the destination would not take');
    expect(exitCodeOf(partly)).toBe(3);
    const both = summaryText(finished({ refusals: [...finished().refusals, ...partly.refusals] }));
    expect(both).toContain(
      '  refused      2 records the destination would not take, and records written only in part; the next pass tries them again:\n',
    );
  });

  it('says nothing of refusals when there were none, nor for a pass from before they were counted', () => {
    const clean = finished({
      counts: { ...emptyCounts(), read: 100, written: 100 },
      refusals: [],
    });
    expect(summaryText(clean)).not.toContain('refused');
    expect(progressLine(clean)).not.toContain('refused');
    // A workflow started by an older worker answers without these fields.
    const legacy = JSON.parse(JSON.stringify(clean)) as Record<string, unknown>;
    delete legacy.refusals;
    delete (legacy.counts as Record<string, unknown>).refused;
    expect(summaryText(legacy as unknown as MirrorProgress)).not.toContain('refused');
    expect(progressLine(legacy as unknown as MirrorProgress)).not.toContain('refused');
  });
});

describe("a pass that paused on a destination's spent daily quota", () => {
  const paused = finished({
    destination: 'pipedrive',
    phase: 'paused',
    counts: { ...emptyCounts(), read: 159, written: 159 },
    refusals: [],
    pausedUntil: '2026-12-05T00:00:00.000Z',
    error: "Pipedrive's daily POST/PUT allowance is spent",
  });

  it('exits 3, as an incomplete pass does: what it read was not all written', () => {
    expect(exitCodeOf(paused)).toBe(3);
    expect(exitCodeOf(finished({ phase: 'incomplete', refusals: [] }))).toBe(3);
    expect(
      exitCodeOf(finished({ counts: { ...emptyCounts(), read: 5, written: 5 }, refusals: [] })),
    ).toBe(0);
    expect(exitCodeOf(finished({ phase: 'failed', error: 'x' }))).toBe(1);
  });

  it('says why and until when, in the summary and in the status report', () => {
    const why =
      "Pipedrive's daily POST/PUT allowance is spent; run this sync again after 2026-12-05T00:00:00.000Z";
    expect(summaryText(paused)).toContain(`  paused       ${why}\n`);
    const pass: PassView = {
      workflowId: 'mirror-shop-1',
      runId: 'r',
      status: 'completed',
      startedAt: 0,
      closedAt: 1,
      progress: paused,
      error: null,
      retrying: null,
      uiUrl: 'http://ui/mirror-shop-1',
    };
    expect(passLine('last', pass, 'pipedrive')).toContain(`            why: ${why}`);
    const ownWords = {
      ...paused,
      error: 'the day is spent; the mirror pauses until 2026-12-05T00:00:00.000Z',
    };
    expect(summaryText(ownWords)).toContain(
      '  paused       the day is spent; the mirror pauses until 2026-12-05T00:00:00.000Z; run this sync again then\n',
    );
    expect(passLine('last', { ...pass, progress: finished() }, 'pipedrive').join('\n')).not.toMatch(
      /why:/,
    );
  });
});

describe('the summary of a first pass over leads', () => {
  it('counts the records it read again apart from those already up to date, and says why', () => {
    const first = finished({
      counts: { ...emptyCounts(), read: 420, written: 300, again: 120 },
      refusals: [],
    });
    expect(summaryText(first)).toContain(
      '  written      300 changed or new; 0 already up to date; 0 marked deleted\n' +
        "  read again   120 records this pass had read already, each counted once above (a lead's bookings come with it and again from the booking list)\n",
    );
    expect(progressLine(first)).toContain('300 written, 0 unchanged, 120 read again, 0 deleted,');
    const second = finished({
      counts: { ...emptyCounts(), read: 420, written: 0, unchanged: 420 },
      refusals: [],
    });
    expect(summaryText(second)).not.toContain('read again');
    expect(progressLine(second)).not.toContain('read again');
    const reach = {
      resource: 'leads',
      configured: 10000,
      reach: 50,
      page: 3,
      per: 20,
      items: 10,
      total: 700,
    };
    const appointments = finished({
      subjects: ['appointments'],
      counts: { ...emptyCounts(), read: 320, written: 300, again: 20 },
      reach,
      refusals: [],
    });
    expect(summaryText(appointments)).toContain(
      "  read again   20 records this pass had read already, each counted once above (queries cut under the service's reach overlap)\n",
    );
    const events = finished({
      subjects: ['events'],
      counts: { ...emptyCounts(), read: 320, written: 300, again: 20 },
      refusals: [],
    });
    expect(summaryText(events)).toContain(
      '  read again   20 records this pass had read already, each counted once above\n',
    );
  });

  it('reads a pass from before the count as before: read again folded into unchanged', () => {
    const legacy = finished({
      counts: { ...emptyCounts(), read: 300, written: 0, unchanged: 300 },
    });
    delete legacy.counts.again;
    expect(summaryText(legacy)).toContain('0 changed or new; 300 already up to date;');
    expect(summaryText(legacy)).not.toContain('read again');
    expect(progressLine(legacy)).toContain('0 written, 300 unchanged, 0 deleted,');
  });
});

describe("a running pass's progress bar", () => {
  const at = (phase: MirrorProgress['phase'], read: number, expected: number, unreachable = 0) =>
    finished({ phase, counts: { ...emptyCounts(), read, expected, unreachable } });

  it('is not full while the pass reads events by id after the lists, only once it is done', () => {
    // The lists' count read, events by id to come (or coming): one cell short, not done.
    for (const pass of [
      at('reading', 3816, 3816),
      at('reading', 4116, 3816),
      at('deleting', 3816, 3816),
    ]) {
      expect(barFraction(pass)).toBe((BAR_CELLS - 1) / BAR_CELLS);
      // As cli-progress draws it (cells rounded): the last one stays empty.
      expect(Math.round(barFraction(pass) * BAR_CELLS)).toBe(BAR_CELLS - 1);
    }
    // Its words say the count as the progress line does, in short.
    expect(readText(at('reading', 4116, 3816).counts, true)).toBe('4116 read (3816 listed)');
    expect(readText(at('reading', 1908, 3816).counts, true)).toBe('1908/3816 read');
    expect(barFraction(at('done', 4116, 3816))).toBe(1);
    expect(barFraction(at('incomplete', 90, 100, 10))).toBe(1);
  });

  it('fills with what was read of what the lists counted, records out of reach settled', () => {
    expect(barFraction(at('reading', 1908, 3816))).toBe(0.5);
    expect(barFraction(at('reading', 40, 100, 10))).toBe(0.5);
    expect(barFraction(at('planning', 0, 0))).toBe(0);
    // A pass that failed or paused half way is not done either.
    expect(barFraction(at('failed', 100, 100))).toBe((BAR_CELLS - 1) / BAR_CELLS);
    // The status page's bar in percent: 99 at most until done.
    expect(barFraction(at('reading', 4116, 3816), 100)).toBe(0.99);
  });

  it('weighs what was read by the share of the lists whose count is known', () => {
    // Appointments and event bookings counted and read; leads and their bookings not yet
    // asked: the bar stood nearly full at a pass's start.
    const early = finished({
      phase: 'reading',
      counts: { ...emptyCounts(), read: 62, expected: 51 },
      partitions: { total: 4, done: 0, uncounted: 0, counted: 1 },
    });
    expect(barFraction(early)).toBe(0.25);
    const known = finished({
      phase: 'reading',
      counts: { ...emptyCounts(), read: 1908, expected: 3816 },
      partitions: { total: 4, done: 1, uncounted: 1, counted: 3 },
    });
    expect(barFraction(known)).toBe(0.5);
    // Older workers do not say: as before.
    const older = finished({
      phase: 'reading',
      counts: { ...emptyCounts(), read: 1908, expected: 3816 },
      partitions: { total: 4, done: 1 },
    });
    expect(barFraction(older)).toBe(0.5);
  });
});

describe("a mirror pass's ETA", () => {
  it('is the records left at the rate so far, counting unreachable ones as settled', () => {
    const counts = { ...emptyCounts(), expected: 1000, read: 500 };
    expect(etaOf(counts, false, 100)).toBe(5_000);
    expect(etaOf({ ...counts, unreachable: 100 }, false, 100)).toBe(4_000);
    expect(etaOf(counts, true, 100)).toBe(0);
  });

  it('is unknown, not 0, while the pass goes on past what the lists counted (events read by id)', () => {
    const counts = { ...emptyCounts(), expected: 3475, read: 3475, written: 3475 };
    expect(etaOf(counts, false, 524.6)).toBeNull();
    expect(etaOf({ ...counts, read: 3600 }, false, 524.6)).toBeNull();
    // Nor while a partition that reads events by id is not done, whatever the lists counted.
    expect(etaOf({ ...counts, read: 3000 }, false, 524.6, 1)).toBeNull();
    expect(etaOf({ ...counts, read: 3000 }, false, 524.6, 0)).toBe(905);
    // Before anything is read or counted there is no rate to go by either.
    expect(etaOf(emptyCounts(), false, 0)).toBeNull();
    const reading = finished({
      phase: 'reading',
      counts,
      refusals: [],
      ratePerSecond: 524.6,
      etaMs: etaOf(counts, false, 524.6),
    });
    expect(progressLine(reading)).not.toContain('ETA');
    expect(progressLine(reading)).toMatch(/^reading: 3475\/3475 read, /);
    // Past the lists' count, no "3600/3475": the count is said apart.
    const past = finished({ phase: 'reading', counts: { ...counts, read: 3600 }, refusals: [] });
    expect(progressLine(past)).toMatch(
      /^reading: 3600 read \(the lists counted 3475; the rest came by id or again\), /,
    );
  });
});

describe('the summary of a pass that read skipped lead ids by id', () => {
  it('says how many leads it found that way, and says nothing when it read none', () => {
    const probed = finished({
      refusals: [],
      counts: { ...emptyCounts(), read: 100, written: 100 },
      probe: { after: 90, probes: 12, found: 11, done: true },
    });
    expect(summaryText(probed)).toContain(
      '  by id        11 leads no filter reached, read by id: 12 ids between those the lead list returned\n',
    );
    expect(
      summaryText(finished({ probe: { after: null, probes: 0, found: 0, done: true } })),
    ).not.toContain('by id');
    expect(summaryText(finished())).not.toContain('by id');
  });
});

describe('the progress of a pass the service slowed', () => {
  it('says how far below EBS_RATE_LIMIT it runs and why, only while it runs slowed', () => {
    const reading = finished({ phase: 'reading', refusals: [], pace: 1 / 16 });
    expect(progressLine(reading)).toMatch(
      /; slowed to 6\.3 % of EBS_RATE_LIMIT: the service turned requests away for its rate; /,
    );
    expect(slowedLine({ phase: 'reading', pace: 0.5 })).toMatch(/^slowed to 50 % /);
    expect(slowedLine({ phase: 'reading', pace: 1 })).toBe('');
    // Passes of older versions carry no pace; a finished pass is not slowed.
    expect(slowedLine({ phase: 'reading' })).toBe('');
    expect(slowedLine({ phase: 'done', pace: 0.5 })).toBe('');
  });

  it('names the missing setting instead of a share of it when the worker has no EBS_RATE_LIMIT', () => {
    const line = slowedLine({ phase: 'reading', pace: 1 / 16, noRateLimit: true });
    expect(line).toBe(
      "the service turns requests away for its rate and EBS_RATE_LIMIT is not set (or 0, no limit): set it on the workers to the service's limit (requests a second) to stay under it",
    );
    expect(line).not.toContain('%');
    expect(slowedLine({ phase: 'done', pace: 1 / 16, noRateLimit: true })).toBe('');
  });
});

describe('the progress of a pass whose workflow has not moved for a while', () => {
  // As the query answered at the pass's last workflow task: 20 s in, 663 of 2074 read.
  const counts = { ...emptyCounts(), expected: 2074, read: 663, written: 663 };
  const frozen = finished({
    phase: 'reading',
    startedAt: 1_000_000,
    elapsedMs: 20_000,
    counts,
    refusals: [],
    ratePerSecond: 33.2,
    etaMs: etaOf(counts, false, 33.15),
  });

  it('works out elapsed time, rate and ETA again from when the pass started', () => {
    // Two minutes later, nothing new: the rate falls, the ETA grows.
    const later = asOfNow(frozen, 1_000_000 + 140_000);
    expect(later.elapsedMs).toBe(140_000);
    expect(later.ratePerSecond).toBe(4.7);
    expect(later.etaMs).toBe(Math.round(((2074 - 663) / (663 / 140)) * 1000));
    expect(progressLine(later)).toContain('4.7/s, ETA 4m58s');
    // While events are still to be read by id, no list counts what is left: no ETA.
    const events = asOfNow(
      { ...frozen, partitions: { total: 4, done: 3, uncounted: 1 } },
      1_000_000 + 140_000,
    );
    expect(events.etaMs).toBeNull();
    expect(progressLine(events)).not.toContain('ETA');
    // Nor a count over what the lists counted so far: it grows as their pages come.
    expect(progressLine(events)).toMatch(
      /^reading: 663 read \(the lists counted 2074 so far; events are read by id, uncounted\), 663 written, /,
    );
    const past = { ...events, counts: { ...counts, read: 2100, written: 2100 } };
    expect(progressLine(past)).toMatch(/^reading: 2100 read \(the lists counted 2074 so far; /);
    // Once that partition is done, the count is the whole one.
    expect(progressLine({ ...events, partitions: { total: 4, done: 4, uncounted: 0 } })).toMatch(
      /^reading: 663\/2074 read, /,
    );
    // A finished pass, or one not started, is as the workflow said.
    expect(asOfNow(finished(), 9e12)).toEqual(finished());
    expect(asOfNow({ ...frozen, startedAt: null }, 9e12).ratePerSecond).toBe(33.2);
  });

  it('keeps the rate it read at while it waits (a paused connection), with no ETA', () => {
    const waiting = asOfNow(frozen, 1_000_000 + 140_000, true);
    expect(waiting.elapsedMs).toBe(140_000);
    expect(waiting.ratePerSecond).toBe(33.2);
    expect(waiting.etaMs).toBeNull();
    expect(progressLine(waiting)).toMatch(/ 33\.2\/s$/);
  });
});

describe('counts of one', () => {
  it('says "1 record in 1 page, 1 request", and "1 of 1 record" and "1 record" refused', () => {
    const one = finished({
      counts: {
        ...emptyCounts(),
        read: 1,
        pages: 1,
        requests: 1,
        expected: 1,
        unreachable: 1,
        refused: 1,
      },
      refusals: ['leads 7 refused: DUPLICATES_DETECTED'],
    });
    const text = summaryText(one);
    expect(text).toContain('  read         1 record in 1 page, 1 request, 4s\n');
    expect(text).toContain('  unreachable  1 of 1 record the service counts:\n');
    expect(text).toContain('  refused      1 record the destination would not take;');
  });
});

describe('a pass that wrote records with no email address into a CRM', () => {
  const pass = (withoutEmail: number) =>
    finished({
      counts: { ...emptyCounts(), read: 10, written: 10, withoutEmail },
      refusals: [],
    });

  it('says how many, in the summary and the progress line, and stays complete (exit 0)', () => {
    expect(summaryText(pass(1))).toContain(
      '  no email     1 record written without an email address or a contact (empty, or text that is no address)\n',
    );
    expect(summaryText(pass(3))).toContain('  no email     3 records written without');
    expect(progressLine(pass(3))).toContain('10 written (3 without email), 0 unchanged');
    expect(exitCodeOf(pass(3))).toBe(0);
  });

  it('says nothing of it when there were none, nor for a pass from before it was counted', () => {
    const older = { ...pass(0).counts };
    delete older.withoutEmail;
    for (const p of [pass(0), finished({ counts: older, refusals: [] })]) {
      expect(summaryText(p)).not.toContain('no email');
      expect(progressLine(p)).toContain('10 written, 0 unchanged');
    }
  });
});

describe('the progress of a pass that ended mid-way', () => {
  it('says how it ended and in which phase, and only the phase while it runs', () => {
    const stopped = finished({ phase: 'reading' });
    expect(progressLine(stopped, 'canceled')).toMatch(/^canceled while reading: /);
    expect(progressLine(stopped)).toMatch(/^reading: /);
    expect(progressLine(finished(), 'completed')).toMatch(/^done: /);
  });
});

describe('the ETA', () => {
  it('is said while a pass is at work, not once it is done or ended', () => {
    const atWork = finished({ phase: 'reading', etaMs: 65_000 });
    expect(progressLine(atWork)).toContain(', ETA 1m05s');
    expect(progressLine(atWork, 'canceled')).not.toContain('ETA');
    expect(progressLine(finished({ etaMs: 0 }))).not.toContain('ETA');
  });
});

describe('the line of a reach the pass learned', () => {
  it('names the setting it guessed with, set or not, and the page that showed the reach', () => {
    expect(
      reachLine({
        resource: 'leads',
        configured: 10_000,
        reach: 255,
        page: 37,
        per: 7,
        items: 3,
        total: 3000,
      }),
    ).toBe(
      'the service reaches 255 results a query, not the 10000 EBS_REACH_LIMIT guessed (10000 unless set): page 37 of leads at 7 a page held 3 of a total_count of 3000; queries over it were cut again',
    );
  });

  it('says only a bound when the page that showed it was empty', () => {
    // Seen against a sandbox reaching 300 (--reach-limit 300, 700 leads): two of three passes
    // learned from an empty page 5 and said the service reaches 400, while it reaches 300. An
    // empty page shows only that the reach is no more than its offset.
    const line = reachLine({
      resource: 'leads',
      configured: 10_000,
      reach: 400,
      page: 5,
      per: 100,
      items: 0,
      total: 700,
    });
    expect(line).toContain('the service reaches at most 400 results a query');
    expect(line).toContain('page 5 of leads at 100 a page held 0 of a total_count of 700');
  });
});
