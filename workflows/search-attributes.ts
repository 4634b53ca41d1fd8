/**
 * Custom search attributes operators filter by in the Temporal UI, e.g.
 * `PartnerId = "…" AND Domain = "coffeebar.com"`. Registered by the dev stack at start and by the
 * compose stack's setup job; shared by workflows and the API that starts them.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const PartnerId = defineSearchAttributeKey('PartnerId', SearchAttributeType.KEYWORD);
export const Domain = defineSearchAttributeKey('Domain', SearchAttributeType.KEYWORD);
export const Environment = defineSearchAttributeKey('Environment', SearchAttributeType.KEYWORD);
export const BusinessStatus = defineSearchAttributeKey('BusinessStatus', SearchAttributeType.KEYWORD);
/**
 * When BusinessStatus last changed, so "orders in TRANSFER_PENDING for more than an hour" is one
 * query: `BusinessStatus = "TRANSFER_PENDING" AND BusinessStatusSince < "<an hour ago>"`.
 */
export const BusinessStatusSince = defineSearchAttributeKey('BusinessStatusSince', SearchAttributeType.DATETIME);

export const ALL_SEARCH_ATTRIBUTES = [PartnerId, Domain, Environment, BusinessStatus, BusinessStatusSince];
