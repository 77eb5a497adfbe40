import { describe, expect, it } from 'vitest';
import {
  DISCOVERED_CAP,
  discover,
  leadSampleOf,
  type Discovered,
  type LeadSample,
} from '../../records/lead-dimensions.js';
import {
  applyPage,
  createPlan,
  markFresh,
  planComplete,
  readySteps,
  type PageStep,
  type PageSummary,
} from '../../records/partition-plan.js';

/** How a lead search is cut: the terms a lead gives, and what the plan keeps of them. */

describe('the terms a lead gives a search', () => {
  it('takes the longest word of a name, never a one-letter word of it', () => {
    const sample = leadSampleOf({
      first_name: "D'Angelo",
      last_name: 'de la Cruz',
      email: 'dangelo@Example.COM',
      phone: '(415) 555-0100',
      venue_city: 'San Francisco',
    });
    expect(sample.domain).toBe('example.com');
    expect(sample.words).toEqual({
      first_name: 'angelo',
      last_name: 'cruz',
      phone_area: '415',
      venue_city: 'francisco',
    });
  });

  it('keeps a long tail of domains: the rarest are the ones no other cut reaches', () => {
    const discovered: Discovered = {};
    const samples: LeadSample[] = Array.from({ length: DISCOVERED_CAP * 3 }, (_, i) => ({
      origin: 'Lead Form',
      lead_type: null,
      source: null,
      domain: `company${i}.example`,
    }));
    discover(discovered, samples);
    expect(Object.keys(discovered.domain ?? {})).toHaveLength(DISCOVERED_CAP * 3);
    expect(Object.keys(discovered.origin ?? {})).toEqual(['Lead Form']);
  });
});

describe('a lead query read only as far as it reaches', () => {
  /** A first page of 100 leads that no filter tells apart, `seenBefore` of them read already. */
  function exhausted(seenBefore: number) {
    const plan = createPlan('leads', { reachLimit: 100, per: 100 });
    const [root] = readySteps(plan);
    const ids = Array.from({ length: 100 }, (_, i) => String(i + 1));
    const summary = {
      totalCount: 300,
      perPage: 100,
      items: 100,
      ids,
      leads: ids.map(() => ({ origin: null, lead_type: null, source: null, domain: null })),
    };
    markFresh(summary, (id) => Number(id) > seenBefore);
    applyPage(plan, root!, summary);
    return plan;
  }

  it('counts all it holds past the reach as a gap when all it read was new', () => {
    const plan = exhausted(0);
    expect(plan.nodes[0]?.status).toBe('done');
    expect(plan.gaps).toEqual([
      expect.objectContaining({ node: 0, reason: 'filters_exhausted', count: 200 }),
    ]);
  });

  it('counts past its reach only the share of what it read that was new to the pass', () => {
    // Three in four of its leads came through other parts already: so, likely, do three in
    // four of those past its reach. Counting them all would hide a residual from the query
    // above, which subtracts the gaps below it from what it must still reach.
    const plan = exhausted(75);
    expect(plan.gaps).toEqual([
      expect.objectContaining({ node: 0, reason: 'filters_exhausted', count: 50 }),
    ]);
    expect(plan.gaps[0]).not.toHaveProperty('byShare');
  });
});

describe('a cut by domains that missed leads', () => {
  /** A lead of the little service below: its domain, and the terms its search matches. */
  interface Lead {
    id: number;
    domain: string;
    matches: string[];
  }

  /** The service's lead list: every text term must match, ordered by id, cut at the reach. */
  function answer(
    leads: Lead[],
    step: PageStep,
    reach: number,
    seen: ReadonlySet<string>,
  ): PageSummary {
    const terms = (step.query.text ?? '').split(' ').filter((t) => t !== '');
    const hits = leads.filter((l) => terms.every((t) => l.matches.includes(t)));
    const offset = (step.page - 1) * step.per;
    const page = hits.slice(offset, Math.min(offset + step.per, reach));
    const summary: PageSummary = {
      totalCount: hits.length,
      perPage: step.per,
      items: page.length,
      ids: page.map((l) => String(l.id)),
      leads: page.map((l) => ({ origin: null, lead_type: null, source: null, domain: l.domain })),
    };
    markFresh(summary, (id) => !seen.has(id));
    return summary;
  }

  it('is cut again by the domains read since, one request each, before any other way on', () => {
    // The first page shows only a.example and b.example. One lead at c.example also turns up
    // in the search for a.example (its notes name it), so the pass learns c.example there; the
    // other 99 at c.example are in no part of the cut by domain.
    const at = (domain: string, n: number, from: number, also: string[] = []): Lead[] =>
      Array.from({ length: n }, (_, i) => ({
        id: from + i,
        domain,
        matches: [domain, ...also],
      }));
    const leads = [
      ...at('a.example', 60, 1),
      ...at('b.example', 40, 61),
      ...at('c.example', 1, 101, ['a.example']),
      ...at('a.example', 29, 102),
      ...at('b.example', 20, 131),
      ...at('c.example', 99, 151),
    ];
    // A domain seen once is expected to hold about one lead of the query: a yield just under
    // the default of one lead per request, so this pass asks for half of one.
    const plan = createPlan('leads', { reachLimit: 100, per: 100, minYield: 0.5 });
    const seen = new Set<string>();
    for (let round = 0; round < 20 && !planComplete(plan); round += 1) {
      for (const step of readySteps(plan)) {
        const summary = answer(leads, step, 100, seen);
        // A page's leads count as seen where the plan keeps them (a probe's are read again).
        if (applyPage(plan, step, summary)) for (const id of summary.ids ?? []) seen.add(id);
      }
    }
    expect(planComplete(plan)).toBe(true);
    expect(seen.size).toBe(leads.length);
    expect(plan.gaps).toEqual([]);
    // The root, its cut by a.example and b.example, then a cover cut by c.example alone.
    const texts = plan.nodes.map((n) => n.query.text ?? '');
    expect(texts).toEqual(['', 'a.example', 'b.example', '', 'c.example']);
    expect(plan.requests).toBe(4);
  });
});
