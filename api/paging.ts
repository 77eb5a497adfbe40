import { EbsError } from './errors.js';
import type { Included, ListMeta } from './schemas/envelope.js';

/**
 * Paging over list endpoints: page/per, stop at total_pages. The service never returns
 * results past its reach limit (10,000) however paged, so every page says how much of the
 * query is reachable, and by default a query that hides results fails before any is read:
 * the caller splits it (date windows, filter values) instead of silently missing records.
 */
export interface ReachInfo {
  /** Results the query matches (total_count). */
  totalCount: number;
  /** How many of them paging can return. */
  reachable: number;
  /** totalCount - reachable: split the query when above zero. */
  hidden: number;
}

export interface Page<T> {
  items: T[];
  included: Included[];
  page: number;
  /** The page size the service granted (meta.per_page), which may be below what was asked. */
  perPage: number;
  totalPages: number;
  reach: ReachInfo;
}

export interface PagingOptions {
  /** Page size to ask for; the service may grant less (default 100). */
  per?: number;
  /** First page (default 1): resume a read from a checkpoint. */
  startPage?: number;
  /** The service's reach limit (default 10,000). */
  reachLimit?: number;
  /** 'throw' (default): ReachLimitError before any item when results are hidden; 'truncate': read what is reachable. */
  onReachLimit?: 'throw' | 'truncate';
}

export class ReachLimitError extends EbsError {
  override readonly name = 'ReachLimitError';
  readonly retryable = false;
  constructor(
    operation: string,
    readonly reach: ReachInfo,
  ) {
    super(
      `${operation}: the query matches ${reach.totalCount} results but only ${reach.reachable} can be paged; split it (date window or filter) and read the parts`,
      { operation },
    );
  }
}

export type FetchPage<T> = (
  page: number,
  per: number,
) => Promise<{ meta: ListMeta; data: T[]; included?: Included[] | undefined }>;

export const DEFAULT_REACH_LIMIT = 10_000;

export function reachOf(totalCount: number, reachLimit: number): ReachInfo {
  const reachable = Math.min(totalCount, reachLimit);
  return { totalCount, reachable, hidden: totalCount - reachable };
}

export async function* paginate<T>(
  operation: string,
  fetchPage: FetchPage<T>,
  options: PagingOptions = {},
): AsyncGenerator<Page<T>> {
  const reachLimit = options.reachLimit ?? DEFAULT_REACH_LIMIT;
  let per = options.per ?? 100;
  let page = options.startPage ?? 1;
  for (;;) {
    const body = await fetchPage(page, per);
    const granted = body.meta.per_page ?? per;
    const totalCount = body.meta.total_count ?? body.data.length;
    const totalPages = body.meta.total_pages ?? Math.ceil(totalCount / granted);
    // A page holding fewer results than its own total_count promises shows a service that
    // reaches fewer than reachLimit: what lies past this page cannot be paged either.
    const promised = Math.min(granted, Math.max(0, totalCount - (page - 1) * granted));
    const short = body.data.length < promised;
    const reach = reachOf(totalCount, short ? (page - 1) * granted + body.data.length : reachLimit);
    if (reach.hidden > 0 && (options.onReachLimit ?? 'throw') === 'throw') {
      throw new ReachLimitError(operation, reach);
    }
    if (body.data.length > 0) {
      yield {
        items: body.data,
        included: body.included ?? [],
        page,
        perPage: granted,
        totalPages,
        reach,
      };
    }
    const reachedEnd =
      short || page >= totalPages || body.data.length === 0 || page * granted >= reachLimit;
    if (reachedEnd) return;
    // The service pages by the size it granted; asking for that size keeps every later page aligned.
    per = granted;
    page += 1;
  }
}
