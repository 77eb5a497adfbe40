import { readFileSync } from 'node:fs';
import { apiKeyAuth } from '../api/auth.js';
import { createClient } from '../api/client.js';
import { listSchema } from '../api/schemas/envelope.js';
import { leadSchema } from '../api/schemas/leads.js';
import {
  fmt,
  getter,
  median,
  ratio,
  seededSandbox,
  summarize,
  type BenchContext,
  type Benchmark,
  type SandboxProcess,
  type Table,
} from './lib.js';

const LEADS = 10_000;
const PER = 100;

/** The schema api/resources/leads.ts checks every list page against (built the same way). */
const leadList = listSchema(leadSchema);

/**
 * Per-call microseconds of each function: rounds of `roundMs` per function in turn (so drift
 * on a shared machine hits all alike), batches of `batch` calls, one sample per batch.
 */
function timeCalls(fns: (() => unknown)[], rounds: number, roundMs: number, batch: number) {
  const samples = fns.map(() => [] as number[]);
  for (const fn of fns) for (let i = 0; i < batch * 5; i++) fn(); // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const [k, fn] of fns.entries()) {
      const end = performance.now() + roundMs;
      while (performance.now() < end) {
        const t0 = performance.now();
        for (let i = 0; i < batch; i++) fn();
        samples[k]?.push(((performance.now() - t0) * 1000) / batch);
      }
    }
  }
  return samples.map((s) => summarize(s));
}

interface ReadResult {
  /** Sum of the read's page times: client call to parsed, validated page. */
  seconds: number;
  leads: number;
  /** Milliseconds of each page. */
  pageMs: number[];
  /** Sum of the transport's per-request durations (request sent to body received). */
  exchangeMs: number;
}

/** One paged read at a time: `next()` reads a page and says how many leads it held (undefined at the end). */
interface Reader {
  start(): void;
  next(): Promise<number | undefined>;
  stop(): Promise<void>;
  /** Milliseconds inside HTTP exchanges since start(). */
  exchangeMs(): number;
}

/** `client.leads.pages()` of one long-lived client (api/client.ts: got, keep-alive). */
function clientReader(sb: SandboxProcess): Reader {
  let exchange = 0;
  const client = createClient({
    baseUrl: sb.baseUrl,
    auth: apiKeyAuth(sb.apiKey),
    ...(sb.caFile ? { ca: readFileSync(sb.caFile) } : { allowInsecureLoopback: true }),
    onResponse: ({ durationMs }) => (exchange += durationMs),
  });
  let pages = client.leads.pages({}, { per: PER });
  return {
    start() {
      exchange = 0;
      pages = client.leads.pages({}, { per: PER });
    },
    async next() {
      const next = await pages.next();
      return next.done ? undefined : next.value.items.length;
    },
    async stop() {
      await pages.return(undefined);
    },
    exchangeMs: () => exchange,
  };
}

/** The same pages as bare GETs on one keep-alive connection: no got, no decoding or parsing, no schema. */
function rawReader(sb: SandboxProcess): Reader {
  const http = getter(
    sb.baseUrl,
    sb.apiKey,
    sb.caFile ? readFileSync(sb.caFile, 'utf8') : undefined,
  );
  let page = 0;
  let exchange = 0;
  return {
    start() {
      page = 0;
      exchange = 0;
    },
    async next() {
      page += 1;
      if (page > LEADS / PER) return undefined;
      const r = await http.time(`/api/v1/leads?page=${page}&per=${PER}`);
      if (r.status !== 200) throw new Error(`raw GET page ${page}: ${r.status}`);
      exchange += r.ms;
      return PER;
    },
    stop: () => Promise.resolve(http.close()),
    exchangeMs: () => exchange,
  };
}

/**
 * One full read per reader, advanced a page at a time in turn: drift on a shared machine
 * then hits every reader alike. `maxPages` cuts a warm-up short.
 */
async function interleavedReads(readers: Reader[], maxPages = Infinity): Promise<ReadResult[]> {
  const reads = readers.map((reader) => {
    reader.start();
    return { reader, result: { seconds: 0, leads: 0, pageMs: [] as number[] }, done: false };
  });
  while (reads.some((r) => !r.done)) {
    for (const read of reads) {
      if (read.done) continue;
      if (read.result.pageMs.length >= maxPages) {
        read.done = true;
        continue;
      }
      const t0 = performance.now();
      const items = await read.reader.next();
      const ms = performance.now() - t0;
      if (items === undefined) {
        read.done = true;
        continue;
      }
      read.result.pageMs.push(ms);
      read.result.seconds += ms / 1000;
      read.result.leads += items;
    }
  }
  return reads.map((r) => ({ ...r.result, exchangeMs: r.reader.exchangeMs() }));
}

async function twoSandboxes(ctx: BenchContext) {
  ctx.log(`starting two sandboxes (HTTPS, HTTP) with ${LEADS.toLocaleString('en-US')} leads each`);
  const [https, http] = await Promise.all([
    seededSandbox({ leads: LEADS, http: false }),
    seededSandbox({ leads: LEADS, http: true }),
  ]);
  ctx.log(`ready via ${http.via}`);
  return { https, http };
}

/** (c) + (d): validating one 100-lead page, and a full paged read through the client. */
export const clientBenchmark: Benchmark = {
  name: 'client',
  title: 'Client: validating a 100-lead page, and a paged read of 10,000 leads',
  async run(ctx) {
    const { https, http } = await twoSandboxes(ctx);
    try {
      // One real page, as the sandbox serves it.
      const g = getter(http.baseUrl, http.apiKey);
      const text = (await g.get(`/api/v1/leads?page=1&per=${PER}`)).text;
      g.close();
      const object: unknown = JSON.parse(text);
      const check = leadList.safeParse(object);
      if (!check.success || check.data.data.length !== PER) {
        throw new Error(`the sample page does not pass the lead list schema with ${PER} leads`);
      }

      ctx.log('timing JSON.parse and schema validation of the page');
      const [jsonOnly, schemaOnly, both] = timeCalls(
        [
          () => JSON.parse(text),
          () => leadList.safeParse(object),
          () => leadList.safeParse(JSON.parse(text)),
        ],
        6,
        250,
        20,
      ) as [
        ReturnType<typeof summarize>,
        ReturnType<typeof summarize>,
        ReturnType<typeof summarize>,
      ];
      const parseRow = (label: string, s: ReturnType<typeof summarize>) => [
        label,
        fmt(s.p50, 0),
        fmt(s.p95, 0),
        fmt(1e6 / s.p50, 0),
        fmt((PER * 1e6) / s.p50, 0),
      ];
      const parseTable: Table = {
        caption: `One page of ${PER} leads (${fmt(text.length / 1024, 1)} KiB of JSON); samples are batches of 20 calls, 6 rounds of 250 ms per variant, interleaved.`,
        head: ['variant', 'µs/page p50', 'µs/page p95', 'pages/s', 'leads/s'],
        rows: [
          parseRow('JSON.parse(text)', jsonOnly),
          parseRow('listSchema(leadSchema).safeParse(object)', schemaOnly),
          parseRow('both (what Transport.call does per page)', both),
        ],
      };

      ctx.log('warming up the three readers');
      const readers = [clientReader(https), clientReader(http), rawReader(http)];
      await interleavedReads(readers, 10);
      const reads = {
        https: [] as ReadResult[],
        http: [] as ReadResult[],
        raw: [] as ReadResult[],
      };
      const ROUNDS = 3;
      for (let r = 0; r < ROUNDS; r++) {
        const [a, b, c] = (await interleavedReads(readers)) as [ReadResult, ReadResult, ReadResult];
        for (const [kind, result] of [
          ['https', a],
          ['http', b],
          ['raw', c],
        ] as const) {
          if (result.leads !== LEADS) throw new Error(`${kind} read ${result.leads} leads`);
          reads[kind].push(result);
        }
        ctx.log(
          `read ${r + 1}/${ROUNDS}: client https ${fmt(a.seconds, 2)} s, client http ${fmt(b.seconds, 2)} s, bare GETs ${fmt(c.seconds, 2)} s`,
        );
      }
      await Promise.all(readers.map((reader) => reader.stop()));
      const readRow = (label: string, rs: ReadResult[]) => {
        const s = summarize(rs.map((r) => r.seconds));
        const page = summarize(rs.flatMap((r) => r.pageMs));
        const share = median(rs.map((r) => r.exchangeMs / 1000 / r.seconds));
        return [
          label,
          s.n,
          fmt(s.p50, 2),
          fmt(LEADS / s.p50, 0),
          fmt(page.p50, 1),
          fmt(page.p95, 1),
          fmt(page.p99, 1),
          `${fmt(share * 100, 0)} %`,
        ];
      };
      const readTable: Table = {
        caption: `client.leads.pages({}, { per: ${PER} }) over all ${LEADS.toLocaleString('en-US')} leads (${LEADS / PER} pages, sequential, keep-alive, one long-lived client each). The three reads advance a page at a time in turn; ${ROUNDS} reads each after a 10-page warm-up.`,
        head: [
          'transport',
          'reads',
          'median read (s)',
          'leads/s',
          'ms/page p50',
          'ms/page p95',
          'ms/page p99',
          'time in HTTP exchange',
        ],
        rows: [
          readRow('HTTPS, sandbox CA (as users run it)', reads.https),
          readRow('plain HTTP (--http)', reads.http),
          readRow('bare GETs, plain HTTP (node:http, body counted, not decoded)', reads.raw),
        ],
      };
      const httpsS = median(reads.https.map((r) => r.seconds));
      const httpS = median(reads.http.map((r) => r.seconds));
      const rawS = median(reads.raw.map((r) => r.seconds));
      const pageP50 = (rs: ReadResult[]) => summarize(rs.flatMap((r) => r.pageMs)).p50;
      const validationS = (both.p50 * (LEADS / PER)) / 1e6;
      return {
        method: `Sandboxes: ${https.via} and ${http.via}, each in its own process. The client is api/client.ts (got, keep-alive agents) in the runner's process; the schema is listSchema(leadSchema), as api/resources/leads.ts builds it.`,
        tables: [parseTable, readTable],
        notes: [
          `Schema validation / JSON.parse of the same page: ${ratio(schemaOnly.p50, jsonOnly.p50)} (p50).`,
          `HTTPS / HTTP: full read ${ratio(httpsS, httpS)}, page p50 ${ratio(pageP50(reads.https), pageP50(reads.http))}.`,
          `Client over plain HTTP / bare GETs of the same pages: full read ${ratio(httpS, rawS)}, page p50 ${ratio(pageP50(reads.http), pageP50(reads.raw))} (got, JSON.parse, schema).`,
          `Client-side parsing and validation of ${LEADS / PER} pages ≈ ${fmt(validationS, 2)} s, ${fmt((validationS / httpsS) * 100, 0)} % of the HTTPS read; "time in HTTP exchange" is the share of the read inside got's request (sandbox work, transfer, TLS).`,
        ],
      };
    } finally {
      await Promise.all([https.stop(), http.stop()]);
    }
  },
};
