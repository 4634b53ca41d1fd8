/** Discovery (spec "Discovery", CONTRACT §5): search, one domain, availability, pricing. */
import type { DataSource } from 'typeorm';
import { ApiError } from '../api/errors';
import { defineRoute, type AdmittedRead, type RouteSpec } from '../api/route';
import type { Environment } from '../config';
import { Cents, Currency, DomainName, z } from '../api/schemas';
import { listingsFromDatabase, type ListingReader } from './listing-cache';
import { findDomain, FIND_LISTING, isAvailable, isOnMarket, listingFromRow, type Listing } from './inventory';
import { MAX_RESULTS, type DomainSearch } from './search';

export const MAX_QUERY_LENGTH = 200;

const SearchResult = z
  .object({
    data: z
      .array(
        z.object({
          name: z.string(),
          available: z.boolean(),
          buy_now_price_cents: Cents,
          currency: Currency,
          score: z.number().min(0).max(1).openapi({ description: 'relevance in [0, 1]; results are sorted by it, best first' }),
        }),
      )
      .max(MAX_RESULTS),
  })
  .openapi('DomainSearchResult');

const DomainDetail = z
  .object({
    name: z.string(),
    available: z.boolean(),
    buy_now_price_cents: Cents,
    floor_price_cents: Cents,
    currency: Currency,
    metadata: z.object({
      tld: z.string(),
      category: z.string(),
      registered_year: z.number().int().nullable(),
      active_site: z.boolean(),
    }),
  })
  .openapi('Domain');

const Availability = z
  .object({ domain: z.string(), available: z.boolean(), buy_now_price_cents: Cents.nullable(), currency: Currency.nullable() })
  .openapi('Availability');

const Pricing = z
  .object({ domain: z.string(), buy_now_price_cents: Cents, floor_price_cents: Cents, currency: Currency })
  .openapi('Pricing');

const DomainQuery = z.object({ domain: DomainName });

/** The listing read inside admission's round trip, for the name the route's own schema will validate. */
const LISTING_READ: AdmittedRead = {
  name: 'listing',
  sql: FIND_LISTING.text,
  params: ({ query, environment }) => {
    const parsed = DomainQuery.safeParse(query);
    return parsed.success ? [environment, parsed.data.domain] : undefined;
  },
};

/** The listing admission read with the request, else (no read made) read now. */
async function listingOf(listings: ListingReader, environment: Environment, name: string, admittedRead: Record<string, unknown> | null | undefined): Promise<Listing | undefined> {
  if (admittedRead === undefined) return listings.find(environment, name);
  return admittedRead === null ? undefined : listingFromRow(admittedRead);
}

/** `listings`: where availability and pricing read when admission did not (Redis admission); Postgres unless given. */
export function discoveryRoutes(deps: { dataSource: DataSource; search: DomainSearch; listings?: ListingReader }): RouteSpec[] {
  const { dataSource, search } = deps;
  const listings = deps.listings ?? listingsFromDatabase(dataSource);
  return [
    defineRoute({
      operationId: 'searchDomains',
      method: 'get',
      path: '/api/partner/v1/domains/search',
      scopes: ['search'],
      tag: 'Discovery',
      summary: 'Search the listed inventory',
      description: `Up to ${MAX_RESULTS} relevant names, best first. Names under an active quote are included with \`available: false\`; sold and unlisted names are left out. No bulk export. While the host's search process is unavailable: 503 \`service_unavailable\` with \`Retry-After\` (other endpoints are not affected).`,
      query: z.object({
        q: z
          .string()
          .trim()
          .min(1, 'required and must not be empty')
          .max(MAX_QUERY_LENGTH, `at most ${MAX_QUERY_LENGTH} characters`)
          .openapi({ example: 'coffee' }),
      }),
      response: { status: 200, description: 'matching names', schema: SearchResult },
      errors: ['validation_error', 'service_unavailable'],
      handler: async ({ query, auth }) => {
        const hits = await search.search(auth.environment, query.q, MAX_RESULTS);
        return {
          body: {
            data: hits.map((h) => ({ name: h.name, available: h.available, buy_now_price_cents: h.buyNowPriceCents, currency: h.currency, score: h.score })),
          },
        };
      },
    }),
    defineRoute({
      operationId: 'getDomain',
      method: 'get',
      path: '/api/partner/v1/domains/{name}',
      scopes: ['search'],
      tag: 'Discovery',
      summary: 'Price, availability and metadata of one listed domain',
      params: z.object({ name: DomainName }),
      response: { status: 200, description: 'the domain', schema: DomainDetail },
      errors: ['validation_error', 'not_found'],
      handler: async ({ params, auth }) => {
        const domain = await findDomain(dataSource, auth.environment, params.name);
        if (!isOnMarket(domain)) throw new ApiError('not_found', `${params.name} is not listed`);
        return {
          body: {
            name: domain.name,
            available: isAvailable(domain),
            buy_now_price_cents: domain.buyNowPriceCents,
            floor_price_cents: domain.floorPriceCents,
            currency: domain.currency,
            metadata: { tld: domain.tld, category: domain.category, registered_year: domain.registeredYear, active_site: domain.activeSite },
          },
        };
      },
    }),
    defineRoute({
      operationId: 'checkAvailability',
      method: 'get',
      path: '/api/partner/v1/availability',
      scopes: ['search'],
      tag: 'Discovery',
      summary: 'Whether a domain can be bought now, with its price',
      description: 'Never 404: an unlisted domain answers `available: false` with a null price.',
      query: DomainQuery,
      response: { status: 200, description: 'availability', schema: Availability },
      errors: ['validation_error'],
      admittedRead: LISTING_READ,
      handler: async ({ query, auth, admittedRead }) => {
        const domain = await listingOf(listings, auth.environment, query.domain, admittedRead);
        const listed = isOnMarket(domain);
        return {
          body: {
            domain: query.domain,
            available: isAvailable(domain),
            buy_now_price_cents: listed ? domain.buyNowPriceCents : null,
            currency: listed ? domain.currency : null,
          },
        };
      },
    }),
    defineRoute({
      operationId: 'getPricing',
      method: 'get',
      path: '/api/partner/v1/pricing',
      scopes: ['search'],
      tag: 'Discovery',
      summary: 'Buy-now and floor price of a listed domain',
      query: DomainQuery,
      response: { status: 200, description: 'prices', schema: Pricing },
      errors: ['validation_error', 'not_found'],
      admittedRead: LISTING_READ,
      handler: async ({ query, auth, admittedRead }) => {
        const domain = await listingOf(listings, auth.environment, query.domain, admittedRead);
        if (!isOnMarket(domain)) throw new ApiError('not_found', `${query.domain} is not listed`);
        return {
          body: { domain: domain.name, buy_now_price_cents: domain.buyNowPriceCents, floor_price_cents: domain.floorPriceCents, currency: domain.currency },
        };
      },
    }),
  ];
}
