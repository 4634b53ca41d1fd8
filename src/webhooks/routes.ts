/** Webhook registration and the replayable event history (spec "Webhooks", CONTRACT §7). */
import type { DataSource } from 'typeorm';
import type { Config } from '../config';
import { ApiError } from '../api/errors';
import { Cursor, decodeCursor, encodeCursor, Limit } from '../api/lists';
import { defineRoute, type RouteSpec } from '../api/route';
import { z } from '../api/schemas';
import type { SecretBox } from '../auth/secret-box';
import type { WorkflowStarter } from '../temporal/start';
import { registerEndpoint } from './endpoints';
import { eventsAfter, eventView } from './events';
import { notifyEventsAppended } from './notify';
import { MAX_SECRET_LENGTH, MAX_URL_LENGTH, MIN_LIVE_SECRET_LENGTH } from './url-policy';
import { webhookRegistrations } from '../metrics/metrics';

const Event = z
  .object({
    id: z.string().openapi({ example: 'evt_3f9a1c2b7d4e5f60a1b2c3d4' }),
    type: z.string().openapi({ example: 'transfer.completed' }),
    created_at: z.string().openapi({ format: 'date-time' }),
    data: z.unknown().openapi({ type: "object", description: "the resource the event is about, e.g. the order as GET /orders/{id} answers it" }),
  })
  .openapi('Event');

export interface WebhookDeps {
  config: Pick<Config, 'webhooks'>;
  dataSource: DataSource;
  secretBox: SecretBox;
  workflows: WorkflowStarter;
}

export function webhookRoutes(deps: WebhookDeps): RouteSpec[] {
  const { config, dataSource, secretBox, workflows } = deps;
  return [
    defineRoute({
      operationId: 'registerWebhook',
      method: 'put',
      path: '/api/partner/webhooks',
      scopes: ['webhook'],
      tag: 'Webhooks',
      summary: 'Register or replace the webhook endpoint of this credential\'s environment',
      description: `\`url\`: an absolute URL (https for live credentials; sandbox may use http, and loopback where the operator allows it, as the local development stack does, so a developer can receive on the same machine). Only public unicast addresses are accepted: private, link-local (cloud metadata), site-local, unique-local, documentation and every other special range are refused, also when the name resolves to one at delivery (a name that does not resolve and one that resolves to such an address get the same error, which never names the address). \`secret\`: leave it out and a Standard Webhooks secret (\`whsec_\` and the base64 of 32 random bytes) is generated and answered in \`secret\`, this once only; or give one of up to ${MAX_SECRET_LENGTH} characters, at least ${MIN_LIVE_SECRET_LENGTH} for live credentials (a \`whsec_\` secret must be \`whsec_\` and the base64 of 24 to 64 bytes). Deliveries are signed with it: \`X-Service-Signature\` always, and the Standard Webhooks headers (\`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\`) when it is a \`whsec_\` secret, so any Standard Webhooks library verifies them. A new secret for an existing endpoint leaves the previous one signing too for 24 hours (each \`whsec_\` secret of the two signs in \`webhook-signature\`, also after a switch from a \`whsec_\` secret to a plain one; \`X-Service-Signature\` is the new secret's alone, so a receiver of plain secrets accepts both, the new and the old, during the switch), so a receiver can switch without losing an event. Events recorded before the first registration are not pushed (they stay in /events). Registering again re-enables an endpoint that delivery disabled after 3 days of failures.`,
      body: z.object({
        url: z.string().max(MAX_URL_LENGTH).openapi({ example: 'https://hooks.example.com/domains' }),
        secret: z.string().min(1, 'must not be empty').max(MAX_SECRET_LENGTH, `at most ${MAX_SECRET_LENGTH} characters`).optional(),
      }),
      response: {
        status: 200,
        description: 'the endpoint',
        schema: z
          .object({
            url: z.string(),
            enabled: z.boolean(),
            updated_at: z.string().openapi({ format: 'date-time' }),
            secret: z.string().optional().openapi({ description: 'The generated secret, only in the answer to a registration without one: store it now, it is never shown again', example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwNzkyNzU2NzU=' }),
          })
          .openapi('WebhookEndpoint'),
      },
      errors: ['validation_error'],
      handler: async ({ body, auth }) => {
        const endpoint = await registerEndpoint(dataSource, secretBox, { partnerId: auth.partnerId, environment: auth.environment, url: body.url, secret: body.secret }, config.webhooks);
        webhookRegistrations.inc({ environment: auth.environment });
        await notifyEventsAppended(dataSource, workflows, auth.partnerId, auth.environment);
        return { body: endpoint };
      },
    }),
    defineRoute({
      operationId: 'listEvents',
      method: 'get',
      path: '/api/partner/v1/events',
      scopes: ['webhook'],
      tag: 'Webhooks',
      summary: "The partner's events, oldest first, resumable from a cursor",
      description:
        '`next_cursor` is never null: it points just after the last event returned (an empty page gives back the cursor it was called with). Store it and call again later to get exactly the events after it, nothing skipped or repeated, also while events are being written. Empty `data` means caught up.',
      query: z.object({ limit: Limit, cursor: Cursor }),
      response: { status: 200, description: 'a page of events', schema: z.object({ data: z.array(Event), next_cursor: z.string() }).openapi('EventList') },
      errors: ['validation_error'],
      handler: async ({ query, auth }) => {
        const cursor = query.cursor ? decodeCursor<{ s: string }>(query.cursor, ['s']) : { s: '0' };
        if (!cursor || !/^\d{1,18}$/.test(cursor.s)) throw new ApiError('validation_error', 'cursor is not one this API gave out', [{ field: 'query.cursor', issue: 'invalid' }]);
        const events = await eventsAfter(dataSource, auth.partnerId, auth.environment, Number(cursor.s), query.limit);
        const last = events.at(-1);
        return { body: { data: events.map(eventView), next_cursor: last ? encodeCursor({ s: String(last.seq) }) : (query.cursor ?? encodeCursor({ s: '0' })) } };
      },
    }),
  ];
}
