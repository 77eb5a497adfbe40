import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyAuth, createClient, ReachLimitError } from '../../api/index.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { createLead } from '../../sandbox/resources/leads.js';
import { readLeadInput } from '../../sandbox/resources/leads-input.js';

// A service that reaches fewer results than the client assumes (10,000 unless told) shows it
// only by a page shorter than its own total_count promises: the read must not end there as if
// the list were whole.
describe('pages() against a service whose reach is below the one assumed', () => {
  let sb: Sandbox;
  let client: ReturnType<typeof createClient>;
  beforeAll(async () => {
    sb = await startSandbox({ http: true, reachLimit: 40 });
    client = createClient({
      baseUrl: sb.baseUrl,
      auth: apiKeyAuth(sb.apiKey),
      allowInsecureLoopback: true,
    });
    for (let i = 0; i < 100; i++) {
      createLead(
        sb.ctx,
        sb.businessId,
        readLeadInput(sb.ctx, sb.businessId, { email: `r${i}@example.com` }),
      );
    }
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('throws ReachLimitError at the short page, with the reach it showed', async () => {
    const seen: number[] = [];
    let error: unknown;
    try {
      for await (const page of client.leads.pages({}, { per: 15 }))
        seen.push(...page.items.map((l) => l.attributes.id));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ReachLimitError);
    expect((error as ReachLimitError).reach).toEqual({
      totalCount: 100,
      reachable: 40,
      hidden: 60,
    });
    expect(seen).toHaveLength(30);
  });

  it('throws before any item when the first page is already short', async () => {
    const seen: unknown[] = [];
    let error: unknown;
    try {
      for await (const page of client.leads.pages({}, { per: 50 })) seen.push(...page.items);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ReachLimitError);
    expect(seen).toHaveLength(0);
  });

  it('in truncate mode reads the 40 reachable and says 60 are hidden', async () => {
    const ids: number[] = [];
    let hidden = -1;
    for await (const page of client.leads.pages({}, { per: 15, onReachLimit: 'truncate' })) {
      ids.push(...page.items.map((l) => l.attributes.id));
      hidden = page.reach.hidden;
    }
    expect(new Set(ids).size).toBe(40);
    expect(hidden).toBe(60);
  });

  it('reads a whole list within the reach as before', async () => {
    const ids: number[] = [];
    for await (const page of client.leads.pages({ email: 'r7@example.com' }, { per: 15 }))
      ids.push(...page.items.map((l) => l.attributes.id));
    expect(ids).toHaveLength(1);
  });
});
