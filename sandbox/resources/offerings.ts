import type { Records, StoredRecord } from '../db.js';
import type { Handlers, SandboxContext } from '../context.js';
import { item, listBody, money, paging, listPage, type Item } from '../envelope.js';
import { queryId } from '../query-params.js';

/**
 * Services (event categories) > package groups > packages (event types), plus backdrops.
 * The spec does not show their fields; these are the ones the rest of the sandbox needs
 * (names, pricing, default length, inventory) and that a business would recognise.
 */
export interface ServiceAttrs extends Record<string, unknown> {
  id: number;
  name: string;
  position: number;
}
export interface PackageGroupAttrs extends Record<string, unknown> {
  id: number;
  name: string;
  service_id: number;
  service_name: string;
  position: number;
}
export type PriceMethod = 'flat_rate' | 'hourly' | 'daily' | 'units';
export interface PackageAttrs extends Record<string, unknown> {
  id: number;
  name: string;
  package_group_id: number;
  package_group_name: string;
  service_id: number;
  service_name: string;
  price_method: PriceMethod;
  price_cents: number;
  default_length_in_minutes: number;
  /** How many bookings of this package can overlap (number of booths, DJs...). */
  quantity_available: number;
  custom: boolean;
  description_html: string;
  preview_image: string;
  position: number;
}
export interface BackdropAttrs extends Record<string, unknown> {
  id: number;
  name: string;
  image_url: string;
}

export function getPackage(
  records: Records,
  businessId: number,
  id: number,
): StoredRecord<PackageAttrs> | undefined {
  return records.get<PackageAttrs>('package', businessId, id);
}

export function getBackdrop(
  records: Records,
  businessId: number,
  id: number,
): StoredRecord<BackdropAttrs> | undefined {
  return records.get<BackdropAttrs>('photobooth_background', businessId, id);
}

export function serviceItem(r: StoredRecord<ServiceAttrs>): Item {
  return item('service', r.attrs);
}
export function packageGroupItem(r: StoredRecord<PackageGroupAttrs>): Item {
  return item('package_group', r.attrs);
}
export function packageItem(r: StoredRecord<PackageAttrs>, currency = 'USD'): Item {
  const { price_cents, ...rest } = r.attrs;
  return item('package', { ...rest, ...money('price', price_cents, currency) });
}

interface CatalogInput {
  services: {
    name: string;
    groups: {
      name: string;
      packages: {
        name: string;
        price_method?: PriceMethod;
        price_cents: number;
        length?: number;
        quantity?: number;
        custom?: boolean;
      }[];
    }[];
  }[];
  backdrops: string[];
}

export const DEFAULT_CATALOG: CatalogInput = {
  services: [
    {
      name: 'Photo Booth',
      groups: [
        {
          name: 'Open-Air Booths',
          packages: [
            { name: 'Classic Booth', price_cents: 79_900, length: 180, quantity: 2 },
            {
              name: 'Hourly Booth',
              price_method: 'hourly',
              price_cents: 25_000,
              length: 120,
              quantity: 2,
            },
          ],
        },
        {
          name: 'Premium Booths',
          packages: [
            { name: 'Glam Booth', price_cents: 129_900, length: 240, quantity: 1 },
            { name: 'Custom Experience', price_cents: 0, length: 240, quantity: 1, custom: true },
          ],
        },
      ],
    },
    {
      name: 'DJ',
      groups: [
        {
          name: 'Wedding DJ',
          packages: [
            { name: 'Ceremony + Reception', price_cents: 189_900, length: 360, quantity: 1 },
            {
              name: 'Multi-day Festival',
              price_method: 'daily',
              price_cents: 250_000,
              length: 1440,
              quantity: 1,
            },
          ],
        },
      ],
    },
  ],
  backdrops: ['Gold Sequin', 'Greenery Wall', 'White Flower Wall'],
};

/** Creates a catalog for a business (its services, groups, packages and backdrops). */
export function createCatalog(
  records: Records,
  businessId: number,
  catalog: CatalogInput = DEFAULT_CATALOG,
): void {
  catalog.services.forEach((service, si) => {
    const s = records.insert<ServiceAttrs>(
      'service',
      businessId,
      (id) => ({ id, name: service.name, position: si + 1 }),
      {
        silent: true,
      },
    );
    service.groups.forEach((group, gi) => {
      const g = records.insert<PackageGroupAttrs>(
        'package_group',
        businessId,
        (id) => ({
          id,
          name: group.name,
          service_id: s.id,
          service_name: service.name,
          position: gi + 1,
        }),
        { parentId: s.id, silent: true },
      );
      group.packages.forEach((pkg, pi) => {
        records.insert<PackageAttrs>(
          'package',
          businessId,
          (id) => ({
            id,
            name: pkg.name,
            package_group_id: g.id,
            package_group_name: group.name,
            service_id: s.id,
            service_name: service.name,
            price_method: pkg.price_method ?? 'flat_rate',
            price_cents: pkg.price_cents,
            default_length_in_minutes: pkg.length ?? 180,
            quantity_available: pkg.quantity ?? 1,
            custom: pkg.custom ?? false,
            description_html: `<p>${pkg.name}</p>`,
            preview_image: `/images/packages/${id}.jpg`,
            position: pi + 1,
          }),
          { parentId: g.id, silent: true },
        );
      });
    });
  });
  for (const name of catalog.backdrops) {
    records.insert<BackdropAttrs>(
      'photobooth_background',
      businessId,
      (id) => ({ id, name, image_url: `/images/backdrops/${id}.jpg` }),
      { silent: true },
    );
  }
}

function listOf<A extends Record<string, unknown>>(
  ctx: SandboxContext,
  type: string,
  businessId: number,
  query: Record<string, unknown>,
  toItem: (r: StoredRecord<A>) => Item,
  parentId?: number,
) {
  const p = paging(query, ctx.limits);
  const { records, total } = listPage<A>(ctx, p, type, businessId, {
    ...(parentId !== undefined ? { parentId } : {}),
    orderBy: "json_extract(attrs, '$.position'), id",
  });
  return listBody(records.map(toItem), total, p);
}

export function offeringsHandlers(): Handlers {
  return {
    'offerings.services': ({ ctx, caller, query }) =>
      listOf<ServiceAttrs>(ctx, 'service', caller.businessId, query, serviceItem),
    'offerings.packageGroups': ({ ctx, caller, query }) =>
      listOf<PackageGroupAttrs>(
        ctx,
        'package_group',
        caller.businessId,
        query,
        packageGroupItem,
        queryId(query, 'service_id'),
      ),
    'offerings.packages': ({ ctx, caller, query }) =>
      listOf<PackageAttrs>(
        ctx,
        'package',
        caller.businessId,
        query,
        (r) => packageItem(r),
        queryId(query, 'package_group_id'),
      ),
  };
}
