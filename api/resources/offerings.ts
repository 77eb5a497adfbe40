import type { z } from 'zod';
import type { Query, Transport } from '../transport.js';
import { paginate, type Page, type PagingOptions } from '../paging.js';
import { listSchema } from '../schemas/envelope.js';
import {
  packageGroupSchema,
  packageGroupsQuerySchema,
  packageSchema,
  packagesQuerySchema,
  serviceSchema,
  servicesQuerySchema,
  type PackageGroupsQuery,
  type PackagesQuery,
  type ServicesQuery,
} from '../schemas/offerings.js';
import type { RouteId } from '../routes.js';

/** A list operation with its one-page call and its pages. */
function listing<Q extends Query, I extends z.ZodType>(
  t: Transport,
  operation: RouteId,
  querySchema: z.ZodType,
  item: I,
) {
  const responseSchema = listSchema(item);
  const list = (query: Q = {} as Q) => t.call(operation, { query, querySchema, responseSchema });
  const pages = (
    query: Q = {} as Q,
    options: PagingOptions = {},
  ): AsyncGenerator<Page<z.infer<I>>> =>
    paginate(
      operation,
      (page, per) =>
        t.call(operation, { query: { ...query, page, per }, querySchema, responseSchema }),
      options,
    );
  return { list, pages };
}

/** Services > package groups > packages. */
export function offeringsResource(t: Transport) {
  const services = listing<ServicesQuery, typeof serviceSchema>(
    t,
    'offerings.services',
    servicesQuerySchema,
    serviceSchema,
  );
  const packageGroups = listing<PackageGroupsQuery, typeof packageGroupSchema>(
    t,
    'offerings.packageGroups',
    packageGroupsQuerySchema,
    packageGroupSchema,
  );
  const packages = listing<PackagesQuery, typeof packageSchema>(
    t,
    'offerings.packages',
    packagesQuerySchema,
    packageSchema,
  );
  return { services, packageGroups, packages };
}
