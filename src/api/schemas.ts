/** Schemas shared by many routes; every schema gets its OpenAPI metadata from zod-to-openapi. */
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { isDomainName, normaliseDomainName } from '../discovery/inventory';
import { ERROR_STATUS } from './errors';

extendZodWithOpenApi(z);

export { z };

export const ErrorBody = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...Array<keyof typeof ERROR_STATUS>]),
      message: z.string(),
      request_id: z.string().openapi({ example: 'req_5f0c2a9d8e7b6a5f4e3d2c1b' }),
      details: z.array(z.object({ field: z.string(), issue: z.string() })).optional(),
      doc_url: z.string().openapi({ format: 'uri', description: "Where /docs explains this code: what it means and what to do", example: 'https://partners.example.com/docs/errors#price_mismatch' }),
    }),
  })
  .openapi('Error');

export const Currency = z.string().length(3).openapi({ description: 'ISO 4217 code; USD in the sandbox', example: 'USD' });
export const CURRENCY_CODE = /^[A-Z]{3}$/;
/** A currency a list is filtered by: an ISO 4217 code in capitals. */
export const CurrencyFilter = z.string().regex(CURRENCY_CODE, 'an ISO 4217 currency code in capitals, such as USD').openapi({ example: 'USD' });

export const Cents = z.number().int().min(0).openapi({ description: 'integer count of minor units (cents)' });

export const DomainName = z
  .string()
  .trim()
  .min(1, 'required')
  .max(253, 'at most 253 characters')
  .transform(normaliseDomainName)
  .refine(isDomainName, 'not a domain name')
  .openapi({ description: 'a domain name, compared case-insensitively', example: 'coffeebar.com' });
