/**
 * Brokerage cases (CONTRACT §10): who may open one, opening it, and how a case reads.
 *
 * Eligibility: a name is ineligible while it runs an active site or has an open case in the same
 * environment. For names in the environment's inventory (listed or not) the inventory's
 * `active_site` decides; for other names, in sandbox, a name whose first label starts with `live-`
 * or `site-` runs an active site (so partners can test the refusal) and any other is eligible; in
 * live an unknown name is eligible (brokers verify the site while researching and close the case
 * if it runs one).
 *
 * Tiers and fees, fixed on the case when it is opened (with the partner's brokerage rate):
 * `managed` 15 % of the deal price, `self_serve` 8 %.
 */
import { randomUUID } from 'node:crypto';
import { QueryFailedError, type DataSource, type EntityManager } from 'typeorm';
import { ApiError } from '../api/errors';
import type { Environment } from '../config';
import { BrokerageCase, BrokerageTimelineEntry } from '../db/entities/brokerage-case';
import { Domain } from '../db/entities/domain';
import { Partner } from '../db/entities/partner';
import { appendEvent, BROKERAGE_EVENT } from '../events/outbox';
import { caseEmailKey, queueCaseEmail } from './case-email';
import { startEmailsOf } from '../mail/start';
import { publicId } from '../ids';
import { startWorkflow, type WorkflowStarter } from '../temporal/start';
import { notifyEventsAppended } from '../webhooks/notify';
import { caseNotOpenedSignal, caseWorkflowId, type CaseStatus, type CaseTier } from '../../workflows/brokerage-messages';
import { progressUrl, type ProgressLinkToken } from './progress-token';
import { checkCaseQuota } from '../partners/quotas';
import type { QuotaDefaults } from '../config';

export const TIER_FEE_BPS: Record<CaseTier, number> = { managed: 1500, self_serve: 800 };
/** Sandbox names outside the inventory that run an active site (see the header). */
export const SANDBOX_ACTIVE_SITE_PREFIXES = ['live-', 'site-'] as const;
export const BROKERAGE_CURRENCY = 'USD';
const OPEN_CASE_INDEX = 'brokerage_cases_open_name_idx';

export type IneligibleReason = 'active_site' | 'in_case';

export interface BrokerageDeps {
  dataSource: DataSource;
  workflows: WorkflowStarter;
  progressToken: ProgressLinkToken;
  publicBaseUrl?: string;
  /** Open cases a partner may hold per environment (CONTRACT §15); unlimited when absent (tools that open no case). */
  quotas?: QuotaDefaults;
}

export interface Eligibility {
  domain: string;
  eligible: boolean;
  reason: IneligibleReason | null;
}

export const REASON_TEXT: Record<IneligibleReason, string> = {
  active_site: 'it runs an active site',
  in_case: 'it already has an open brokerage case',
};

export async function checkEligibility(dataSource: DataSource, environment: Environment, domain: string): Promise<Eligibility> {
  const listed = await dataSource.getRepository(Domain).findOne({ select: { id: true, activeSite: true }, where: { environment, name: domain } });
  const activeSite = listed ? listed.activeSite : environment === 'sandbox' && SANDBOX_ACTIVE_SITE_PREFIXES.some((p) => domain.startsWith(p));
  if (activeSite) return { domain, eligible: false, reason: 'active_site' };
  const open = await dataSource
    .getRepository(BrokerageCase)
    .createQueryBuilder('c')
    .where("c.environment = :environment AND c.domain = :domain AND c.status NOT IN ('completed', 'closed')", { environment, domain })
    .getExists();
  return open ? { domain, eligible: false, reason: 'in_case' } : { domain, eligible: true, reason: null };
}

function notEligible(domain: string, reason: IneligibleReason): ApiError {
  return new ApiError('domain_not_eligible', `${domain} cannot be brokered: ${REASON_TEXT[reason]} (${reason})`, [{ field: 'body.domain', issue: reason }]);
}

/** Another case for the name committed first. */
class LostRace extends Error {}

function isOpenCaseConflict(err: unknown): boolean {
  return err instanceof QueryFailedError && (err.driverError as { code?: string; constraint?: string }).constraint === OPEN_CASE_INDEX;
}

/** What every brokerage event carries: the case as the partner sees it at that status. */
export function caseEventData(c: BrokerageCase, at: Date, detail: string | null) {
  return { case_id: c.publicId, domain: c.domain, tier: c.tier, status: c.status, at: at.toISOString(), detail, price_cents: c.priceCents, currency: c.currency, outcome: outcomeOf(c) };
}

/**
 * Opens a case. Its workflow starts first (the case never exists without its timers); then the
 * case, its `requested` entry and its event are written in one transaction, where the partial
 * unique index settles a race for the name: the loser's workflow is told the case was never
 * opened and the partner gets 422 in_case.
 */
export async function openCase(
  deps: BrokerageDeps,
  input: { partnerId: string; environment: Environment; domain: string; tier: CaseTier; buyerEmail: string; budgetCents: number },
): Promise<BrokerageCase> {
  const verdict = await checkEligibility(deps.dataSource, input.environment, input.domain);
  if (!verdict.eligible) throw notEligible(input.domain, verdict.reason!);
  // Before any work: a partner at its quota starts no workflow (checked again under lock below).
  if (deps.quotas) await checkCaseQuota(deps.dataSource.manager, deps.quotas, input.partnerId, input.environment);

  const caseId = randomUUID();
  const casePublicId = publicId('brk');
  const handle = (await startWorkflow(deps.workflows, 'brokerageCaseWorkflow', {
    workflowId: caseWorkflowId(casePublicId),
    args: [{ caseId, casePublicId, tier: input.tier }],
    mode: 'fresh',
    summary: `Brokerage ${casePublicId} ${input.domain} (${input.tier}) for partner ${input.partnerId} (${input.environment})`,
    details: `Move the case with the Update \`move\` ({"to": "researching"}) or \`npm run --silent admin -- brokerage move ${casePublicId} --to <status> --json\`.`,
    attributes: { partnerId: input.partnerId, domain: input.domain, environment: input.environment, businessStatus: 'requested' },
  }))!;
  try {
    const opened = await deps.dataSource.transaction(async (tx) => {
      // Under the partner's row lock: two cases racing at the quota cannot both open.
      if (deps.quotas) await checkCaseQuota(tx, deps.quotas, input.partnerId, input.environment, true);
      const partner = await tx.getRepository(Partner).findOneOrFail({ select: { id: true, commissionBrokerageBps: true }, where: { id: input.partnerId } });
      const now = new Date();
      const row = tx.getRepository(BrokerageCase).create({
        id: caseId,
        publicId: casePublicId,
        partnerId: input.partnerId,
        environment: input.environment,
        domain: input.domain,
        tier: input.tier,
        status: 'requested',
        buyerEmail: input.buyerEmail,
        budgetCents: input.budgetCents,
        currency: BROKERAGE_CURRENCY,
        feeBps: TIER_FEE_BPS[input.tier],
        partnerShareBps: partner.commissionBrokerageBps,
        priceCents: null,
        feeCents: null,
        partnerShareCents: null,
        moves: 1,
        followUpsSent: 0,
        linkVersion: 1,
        closeReason: null,
        createdAt: now,
        updatedAt: now,
        closedAt: null,
      });
      // ON CONFLICT DO NOTHING: the only conflict a fresh case can meet is the open-case index (its ids are new).
      const inserted = await tx.getRepository(BrokerageCase).createQueryBuilder().insert().values(row).orIgnore().returning(['id']).execute();
      if ((inserted.raw as unknown[]).length === 0) return undefined;
      await tx.getRepository(BrokerageTimelineEntry).insert({ caseId, seq: 1, status: 'requested', at: now, detail: null });
      await appendEvent(tx, { partnerId: input.partnerId, environment: input.environment, type: BROKERAGE_EVENT.requested, data: caseEventData(row, now, null), dedupeKey: `brokerage:${caseId}:1` });
      await queueCaseEmail(tx, row, 1);
      return row;
    });
    if (!opened) throw new LostRace();
    await notifyEventsAppended(deps.dataSource, deps.workflows, input.partnerId, input.environment);
    // The buyer hears of the opening (the recovery sweep starts this email's workflow if this start is lost).
    await startEmailsOf(deps.workflows, deps.dataSource, [caseEmailKey(caseId, 1)]).catch(() => undefined);
    return opened;
  } catch (err) {
    await handle.signal(caseNotOpenedSignal).catch(() => undefined);
    if (err instanceof LostRace || isOpenCaseConflict(err)) throw notEligible(input.domain, 'in_case');
    throw err;
  }
}

export async function findCase(manager: EntityManager, casePublicId: string): Promise<BrokerageCase | null> {
  return manager.getRepository(BrokerageCase).findOneBy({ publicId: casePublicId });
}

export interface CaseOutcome {
  result: 'acquired' | 'not_acquired';
  price_cents?: number;
  fee_cents?: number;
  partner_share_cents?: number;
  reason?: string;
  closed_at: string;
}

export function outcomeOf(c: BrokerageCase): CaseOutcome | null {
  if (c.status === 'completed') {
    return { result: 'acquired', price_cents: c.priceCents!, fee_cents: c.feeCents!, partner_share_cents: c.partnerShareCents!, closed_at: c.closedAt!.toISOString() };
  }
  if (c.status === 'closed') return { result: 'not_acquired', reason: c.closeReason ?? 'closed', closed_at: c.closedAt!.toISOString() };
  return null;
}

export interface TimelineView {
  status: CaseStatus;
  at: string;
  detail?: string;
}

export async function timelines(manager: EntityManager, caseIds: string[]): Promise<Map<string, TimelineView[]>> {
  const byCase = new Map<string, TimelineView[]>(caseIds.map((id) => [id, []]));
  if (!caseIds.length) return byCase;
  const rows = await manager.getRepository(BrokerageTimelineEntry).createQueryBuilder('t').where('t.case_id IN (:...caseIds)', { caseIds }).orderBy('t.case_id').addOrderBy('t.seq').getMany();
  for (const r of rows) byCase.get(r.caseId)!.push({ status: r.status, at: r.at.toISOString(), ...(r.detail ? { detail: r.detail } : {}) });
  return byCase;
}

/** The case as its partner reads it (GET /brokerage/{case_id}, the list, the admin commands). */
export function caseView(c: BrokerageCase, timeline: TimelineView[], progressLink: string) {
  return {
    case_id: c.publicId,
    domain: c.domain,
    tier: c.tier,
    status: c.status,
    buyer_email: c.buyerEmail,
    budget_cents: c.budgetCents,
    currency: c.currency,
    price_cents: c.priceCents,
    progress_url: progressLink,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
    timeline,
    outcome: outcomeOf(c),
  };
}
export type CaseView = ReturnType<typeof caseView>;

export async function loadCaseView(manager: EntityManager, token: ProgressLinkToken, c: BrokerageCase, baseUrl: string): Promise<CaseView> {
  return caseView(c, (await timelines(manager, [c.id])).get(c.id)!, progressUrl(baseUrl, token.sign(c.publicId, c.linkVersion)));
}

/** Newest first, keyset-paginated on (created_at, id); the cursor keeps created_at to the microsecond. */
export async function listCases(
  deps: Pick<BrokerageDeps, 'dataSource' | 'progressToken'>,
  partnerId: string,
  environment: Environment,
  page: { limit: number; cursor?: { createdAt: string; id: string } },
  baseUrl: string,
): Promise<{ data: CaseView[]; next: { createdAt: string; id: string } | null }> {
  const q = deps.dataSource
    .getRepository(BrokerageCase)
    .createQueryBuilder('c')
    .addSelect(`to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`, 'cursor_at')
    .where('c.partner_id = :partnerId AND c.environment = :environment', { partnerId, environment });
  if (page.cursor) q.andWhere('(c.created_at, c.id) < (CAST(:cursorAt AS timestamptz), CAST(:cursorId AS uuid))', { cursorAt: page.cursor.createdAt, cursorId: page.cursor.id });
  const { entities, raw } = await q.orderBy('c.created_at', 'DESC').addOrderBy('c.id', 'DESC').limit(page.limit + 1).getRawAndEntities<{ cursor_at: string }>();
  const shown = entities.slice(0, page.limit);
  const lines = await timelines(deps.dataSource.manager, shown.map((c) => c.id));
  return {
    data: shown.map((c) => caseView(c, lines.get(c.id)!, progressUrl(baseUrl, deps.progressToken.sign(c.publicId, c.linkVersion)))),
    next: entities.length > page.limit ? { createdAt: raw[page.limit - 1].cursor_at, id: shown[shown.length - 1].id } : null,
  };
}
