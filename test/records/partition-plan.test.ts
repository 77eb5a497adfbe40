import { describe, expect, it } from 'vitest';
import {
  applyPage,
  createPlan,
  planComplete,
  readySteps,
  rereadMoved,
  type PageStep,
  type PageSummary,
} from '../../records/partition-plan.js';

/**
 * The partition plan on its own (no I/O): what a page's counts teach it about the service's
 * reach, and how a count that moves while a query is read is told apart from a reach.
 */

const dated = (n: number, date = '2026-03-01'): (string | null)[] => Array<string>(n).fill(date);

/** A list of `total` dated results answered as a service with `reach` answers it. */
function answer(step: PageStep, total: number, reach: number, date?: string): PageSummary {
  const per = step.per;
  const offset = (step.page - 1) * per;
  const items = Math.max(0, Math.min(per, total - offset, reach - offset));
  return { totalCount: total, perPage: per, items, dates: dated(items, date) };
}

describe('a reach below the configured one', () => {
  it('is learned from a page that holds fewer results than its total_count promises', () => {
    const plan = createPlan('appointments', { reachLimit: 10_000, per: 100 });
    const [root] = readySteps(plan);
    applyPage(plan, root!, answer(root!, 2_000, 100, '2026-01-01'));
    // 2,000 fit the configured reach: all 20 pages are planned; four go out at once.
    const inFlight = readySteps(plan, { max: 4 });
    expect(inFlight.map((s) => s.page)).toEqual([2, 3, 4, 5]);
    // Page 3 answers first: empty, though 2,000 are counted. The reach is at most 200.
    applyPage(plan, inFlight[1]!, answer(inFlight[1]!, 2_000, 100));
    expect(plan.reachLimit).toBe(200);
    expect(plan.learned).toMatchObject({ configured: 10_000, reach: 200, page: 3, items: 0 });
    expect(plan.nodes[0]).toMatchObject({ status: 'new', epoch: 1, total: null, done: [] });
    // Page 2, asked before the reset and also empty: its evidence holds, at most 100.
    applyPage(plan, inFlight[0]!, answer(inFlight[0]!, 2_000, 100));
    expect(plan.reachLimit).toBe(100);
    expect(plan.nodes[0]).toMatchObject({ status: 'new', epoch: 1, total: null, done: [] });
    // Late answers for the reset root (an earlier epoch) change nothing.
    const before = JSON.stringify(plan.nodes);
    applyPage(plan, inFlight[2]!, answer(inFlight[2]!, 2_000, 100));
    applyPage(plan, inFlight[3]!, answer(inFlight[3]!, 2_000, 100));
    expect(JSON.stringify(plan.nodes)).toBe(before);
    // Its first page is asked again, and this time it is cut by date.
    const [again] = readySteps(plan);
    expect(again).toMatchObject({ node: 0, epoch: 1, page: 1, per: 100 });
    applyPage(plan, again!, {
      totalCount: 2_000,
      perPage: 100,
      items: 100,
      dates: Array.from(
        { length: 100 },
        (_, i) => `2026-${String(1 + (i % 12)).padStart(2, '0')}-15`,
      ),
    });
    expect(plan.nodes[0]?.status).toBe('split');
    expect(plan.nodes.length).toBeGreaterThan(10);
  });

  it('is learned from a short first page, and that query is cut at once', () => {
    const plan = createPlan('appointments', { reachLimit: 10_000, per: 100 });
    const [root] = readySteps(plan);
    // 50 of 2,000 on the first page: the reach is 50.
    applyPage(plan, root!, {
      totalCount: 2_000,
      perPage: 100,
      items: 50,
      dates: Array.from(
        { length: 50 },
        (_, i) => `2026-01-${String(1 + (i % 28)).padStart(2, '0')}`,
      ),
    });
    expect(plan.reachLimit).toBe(50);
    expect(plan.per).toBe(50);
    expect(plan.nodes[0]?.status).toBe('split');
    expect(readySteps(plan).every((s) => s.per === 50)).toBe(true);
  });

  it('resets only queries whose total is over it; the others go on, pages in flight included', () => {
    const plan = createPlan('appointments', { reachLimit: 300, per: 50 });
    const [root] = readySteps(plan);
    applyPage(plan, root!, {
      totalCount: 600,
      perPage: 50,
      items: 50,
      dates: [...dated(25, '2026-01-10'), ...dated(25, '2026-05-10')],
    });
    const firsts = readySteps(plan);
    expect(firsts.length).toBeGreaterThanOrEqual(2);
    // One window holds 250 (under 300), another 80.
    applyPage(plan, firsts[0]!, answer(firsts[0]!, 250, 1_000));
    applyPage(plan, firsts[1]!, answer(firsts[1]!, 80, 1_000));
    for (const part of firsts.slice(2)) applyPage(plan, part, answer(part, 0, 1_000));
    const small = plan.nodes[firsts[1]!.node]!;
    const big = plan.nodes[firsts[0]!.node]!;
    const page2OfSmall = readySteps(plan).find((s) => s.node === small.id)!;
    // A page of the big window shows a reach of 150.
    const page4 = readySteps(plan).find((s) => s.node === big.id && s.page === 4)!;
    applyPage(plan, page4, { totalCount: 250, perPage: 50, items: 0, dates: [] });
    expect(plan.reachLimit).toBe(150);
    expect(big).toMatchObject({ status: 'new', epoch: 1 });
    expect(small).toMatchObject({ status: 'reading', epoch: 0 });
    // The small window's page, asked before the reach was learned, still counts.
    applyPage(plan, page2OfSmall, answer(page2OfSmall, 80, 1_000));
    expect(small.status).toBe('done');
  });
});

describe('a total_count that moves while a query is read', () => {
  it('is no reach: the pages follow the new count, and the query can be read again', () => {
    const plan = createPlan('appointments', { reachLimit: 10_000, per: 100 });
    const [root] = readySteps(plan);
    applyPage(plan, root!, answer(root!, 250, 10_000));
    const [p2, p3] = readySteps(plan);
    // Sixty deleted before page 2: 190 now, so page 2 is full and page 3 is empty, and both
    // agree with their own count.
    applyPage(plan, p2!, answer(p2!, 190, 10_000));
    expect(plan.learned).toBeNull();
    expect(plan.reachLimit).toBe(10_000);
    expect(plan.nodes[0]).toMatchObject({ total: 190, pages: 2, moved: true });
    expect(planComplete(plan)).toBe(true);
    // A page asked before the count moved is no evidence either (it was applied already).
    applyPage(plan, p3!, answer(p3!, 190, 10_000));
    expect(plan.learned).toBeNull();
    // The pass came up short: the moved query is read again, at most twice.
    expect(rereadMoved(plan)).toBe(1);
    expect(plan.nodes[0]).toMatchObject({ status: 'new', epoch: 1, rereads: 1 });
    const [again] = readySteps(plan);
    applyPage(plan, again!, answer(again!, 190, 10_000));
    applyPage(plan, readySteps(plan)[0]!, answer(readySteps(plan)[0]!, 190, 10_000));
    expect(planComplete(plan)).toBe(true);
    expect(rereadMoved(plan)).toBe(0);
  });
});
