/**
 * Partners' onboarding (CONTRACT §16): applying, verifying (the partner and its sandbox
 * credential are created), asking for live access with its checklist, and the operators'
 * decision. The application's row is the truth and every change takes its lock; each step is
 * recorded in its `history` (the audit trail; the operators' commands are in `operator_actions`
 * too), and the emails it owes are queued in the same transaction (src/mail/outbox.ts). The
 * callers tell the `partner-onboarding:<id>` workflow after the commit (src/partners/onboarding-flow.ts).
 */
import { In, type DataSource, type EntityManager } from 'typeorm';
import type { CredentialService } from '../auth/credentials';
import type { Scope } from '../auth/scopes';
import { CheckoutSession } from '../db/entities/checkout-session';
import { Credential } from '../db/entities/credential';
import { Order } from '../db/entities/order';
import { DEFAULT_COMMISSION_BPS, Partner } from '../db/entities/partner';
import { PartnerApplication, type ApplicationStatus, type ApplicationStep } from '../db/entities/partner-application';
import { WebhookDelivery } from '../db/entities/webhook-delivery';
import { queueEmail } from '../mail/outbox';
import { ROW_LOCK } from '../db/row-lock';

/** Scopes of the sandbox credential a verified application gets (CONTRACT §16). */
export const SANDBOX_SCOPES: Scope[] = ['search', 'buy', 'embed', 'broker', 'report', 'webhook'];
/** The verification link works for 24 hours after applying. */
export const VERIFY_LINK_MS = 24 * 60 * 60 * 1000;
/** The approval's link shows the live credential within 7 days of the approval. */
export const LIVE_LINK_MS = 7 * 24 * 60 * 60 * 1000;
/** At most this many applications a day for one contact email: nobody's mailbox is flooded through the form. */
export const APPLICATIONS_PER_EMAIL_PER_DAY = 3;

export interface ApplicationForm {
  companyName: string;
  contactEmail: string;
  website: string;
  description: string;
  merchantOfRecord: boolean;
}

export type ChecklistItem = 'sandbox_order_completed' | 'webhook_endpoint_verified' | 'sandbox_checkout_paid';
export type Checklist = Array<{ item: ChecklistItem; done: boolean }>;

export class OnboardingRefused extends Error {}

function step(step: string, by: string, detail?: string): ApplicationStep {
  return { step, at: new Date().toISOString(), by, ...(detail ? { detail } : {}) };
}

const appendStep = (history: ApplicationStep[], s: ApplicationStep) => [...history, s];

async function lockApplication(manager: EntityManager, where: { id?: string; partnerId?: string }): Promise<PartnerApplication | null> {
  const qb = manager.getRepository(PartnerApplication).createQueryBuilder('a').setLock(ROW_LOCK);
  if (where.id) qb.where('a.id = :id', { id: where.id });
  else qb.where('a.partner_id = :partnerId', { partnerId: where.partnerId });
  return qb.getOne();
}

/**
 * Records an application and queues its verification email; answers its id. A contact email
 * that applied APPLICATIONS_PER_EMAIL_PER_DAY times in the last day records nothing (the page
 * says the same, so the form tells nobody whether an address applied).
 */
export async function recordApplication(dataSource: DataSource, form: ApplicationForm): Promise<string | undefined> {
  return dataSource.transaction(async (tx) => {
    const email = form.contactEmail.toLowerCase();
    // Raw SQL: a transaction-scoped advisory lock (a Postgres feature) per address, so applications sent at once are counted one after another.
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`partner-application:${email}`]);
    const recent = await tx
      .getRepository(PartnerApplication)
      .createQueryBuilder('a')
      .where("lower(a.contact_email) = :email AND a.created_at > now() - interval '1 day'", { email })
      .getCount();
    if (recent >= APPLICATIONS_PER_EMAIL_PER_DAY) return undefined;
    const repo = tx.getRepository(PartnerApplication);
    const row = await repo.save(
      repo.create({
        origin: 'page',
        companyName: form.companyName,
        contactEmail: form.contactEmail,
        website: form.website,
        description: form.description,
        merchantOfRecord: form.merchantOfRecord,
        status: 'applied',
        history: [step('applied', form.contactEmail)],
      }),
    );
    await queueEmail(tx, { key: `application-verification:${row.id}`, kind: 'application_verification', to: form.contactEmail, data: { applicationId: row.id, companyName: form.companyName } });
    return row.id;
  });
}

/** A partner name not taken yet: the company's name, else with the application's first characters. */
async function freePartnerName(manager: EntityManager, companyName: string, applicationId: string): Promise<string> {
  const taken = await manager.getRepository(Partner).existsBy({ name: companyName });
  return taken ? `${companyName} (${applicationId.slice(0, 8)})` : companyName;
}

/** A single-use link opened: the credential it shows, this once, or why it shows none. */
export type RevealOutcome = { ok: true; partnerName: string; keyId: string; secret: string; scopes: string[] } | { ok: false; reason: 'unknown' | 'used' | 'expired' };

/**
 * The verification link opened: creates the partner (merchant of record as ticked, default
 * terms, the contact email) and its sandbox credential, whose secret is answered this once.
 */
export async function verifyApplication(dataSource: DataSource, credentials: CredentialService, applicationId: string): Promise<RevealOutcome> {
  return dataSource.transaction(async (tx) => {
    const app = await lockApplication(tx, { id: applicationId });
    if (!app || app.origin !== 'page') return { ok: false, reason: 'unknown' };
    if (app.status !== 'applied') return { ok: false, reason: app.status === 'expired' ? 'expired' : 'used' };
    if (Date.now() - app.createdAt.getTime() > VERIFY_LINK_MS) return { ok: false, reason: 'expired' };
    const partners = tx.getRepository(Partner);
    const partner = await partners.save(
      partners.create({
        name: await freePartnerName(tx, app.companyName, app.id),
        merchantOfRecord: app.merchantOfRecord,
        commissionPartnerCollectedBps: DEFAULT_COMMISSION_BPS.partnerCollected,
        commissionServiceCollectedBps: DEFAULT_COMMISSION_BPS.serviceCollected,
        commissionBrokerageBps: DEFAULT_COMMISSION_BPS.brokerage,
        commissionReferralBps: DEFAULT_COMMISSION_BPS.referral,
        affiliateAccountId: null,
        contactEmail: app.contactEmail,
      }),
    );
    const issued = await credentials.issue({ partnerId: partner.id, environment: 'sandbox', scopes: SANDBOX_SCOPES }, tx);
    await tx.getRepository(PartnerApplication).update(
      { id: app.id },
      { status: 'verified', partnerId: partner.id, verifiedAt: () => 'now()', history: appendStep(app.history, step('verified', app.contactEmail ?? 'applicant', `partner ${partner.name}, sandbox credential ${issued.keyId}`)) },
    );
    await queueEmail(tx, { key: `sandbox-credentials-ready:${app.id}`, kind: 'sandbox_credentials_ready', to: app.contactEmail!, data: { companyName: app.companyName, keyId: issued.keyId } });
    return { ok: true, partnerName: partner.name, keyId: issued.keyId, secret: issued.secret, scopes: SANDBOX_SCOPES };
  });
}

/** What the operators look at before switching live on: the partner's sandbox, as it is now. */
export async function checklistOf(manager: EntityManager, partner: Pick<Partner, 'id' | 'merchantOfRecord'>): Promise<Checklist> {
  const orderDone = await manager.getRepository(Order).existsBy({ partnerId: partner.id, environment: 'sandbox', status: 'TRANSFER_COMPLETED' });
  const webhookDone = await manager.getRepository(WebhookDelivery).existsBy({ partnerId: partner.id, environment: 'sandbox', status: 'delivered' });
  const list: Checklist = [
    { item: 'sandbox_order_completed', done: orderDone },
    { item: 'webhook_endpoint_verified', done: webhookDone },
  ];
  if (!partner.merchantOfRecord) {
    const paid = await manager.getRepository(CheckoutSession).existsBy({ partnerId: partner.id, environment: 'sandbox', status: 'complete' });
    list.push({ item: 'sandbox_checkout_paid', done: paid });
  }
  return list;
}

export type LiveAccessStatus = 'in_review' | 'approved' | 'rejected';

export interface LiveAccessAnswer {
  applicationId: string;
  status: LiveAccessStatus;
  checklist: Checklist;
  /** The workflow to start (`live_requested` stage) or to signal; undefined when nothing changed for it. */
  workflow: 'start' | 'signal' | undefined;
}

function liveStatusOf(status: ApplicationStatus): LiveAccessStatus {
  return status === 'approved' ? 'approved' : status === 'rejected' ? 'rejected' : 'in_review';
}

/**
 * A partner asks for live access: the first ask records the request (a partner an operator
 * created gets its application row now); asked again, the same request answers, its checklist
 * as it is now.
 */
export async function requestLiveAccess(dataSource: DataSource, partnerId: string, by: string): Promise<LiveAccessAnswer> {
  return dataSource.transaction(async (tx) => {
    const partner = await tx.getRepository(Partner).findOneByOrFail({ id: partnerId });
    const checklist = await checklistOf(tx, partner);
    let app = await lockApplication(tx, { partnerId });
    if (!app) {
      const repo = tx.getRepository(PartnerApplication);
      // Two first asks at once: one row (partner_id is unique), the other reads it.
      await repo
        .createQueryBuilder()
        .insert()
        .values({
          origin: 'operator',
          companyName: partner.name,
          contactEmail: partner.contactEmail,
          merchantOfRecord: partner.merchantOfRecord,
          status: 'live_requested',
          partnerId,
          checklist,
          liveRequestedAt: () => 'now()',
          history: [step('live_requested', by)],
        })
        .orIgnore()
        .execute();
      app = await lockApplication(tx, { partnerId });
      return { applicationId: app!.id, status: liveStatusOf(app!.status), checklist, workflow: 'start' };
    }
    if (app.status === 'verified') {
      await tx.getRepository(PartnerApplication).update({ id: app.id }, { status: 'live_requested', liveRequestedAt: () => 'now()', checklist, history: appendStep(app.history, step('live_requested', by)) });
      return { applicationId: app.id, status: 'in_review', checklist, workflow: 'signal' };
    }
    if (app.status === 'live_requested') await tx.getRepository(PartnerApplication).update({ id: app.id }, { checklist });
    // Asked again: the same request (its signal again, harmless, in case the first was lost).
    return { applicationId: app.id, status: liveStatusOf(app.status), checklist, workflow: app.status === 'live_requested' ? 'signal' : undefined };
  });
}

export interface DecisionAnswer {
  applicationId: string;
  partner: string;
  status: 'approved' | 'rejected';
  live_key_id: string | null;
  scopes: string[] | null;
  reason: string | null;
  /** Where the email went; null when the partner has no contact email (then reveal_url is answered to the operator). */
  emailed_to: string | null;
  changed: boolean;
  /** The business event of the email this decision queued (its workflow is started after the commit). */
  emailKey: string | null;
}

/**
 * An operator approves (the live credential is issued with `scopes` and a single-use link to it
 * is emailed) or rejects (the reason is emailed). Deciding again the same way answers the same
 * decision; a rejected request may still be approved, an approved one is never rejected (revoke
 * its credential instead).
 */
export async function decideLiveAccess(
  dataSource: DataSource,
  credentials: CredentialService,
  partnerName: string,
  decision: { approve: true; scopes?: Scope[] } | { approve: false; reason: string },
  operator: string,
): Promise<DecisionAnswer> {
  return dataSource.transaction(async (tx) => {
    const partner = await tx.getRepository(Partner).findOneBy({ name: partnerName });
    if (!partner) throw new OnboardingRefused(`no partner named ${partnerName}`);
    const app = await lockApplication(tx, { partnerId: partner.id });
    if (!app) throw new OnboardingRefused(`${partnerName} has not asked for live access (POST /api/partner/v1/live-access)`);
    const answer = (a: PartnerApplication, changed: boolean, emailKey: string | null = null): DecisionAnswer => ({
      applicationId: a.id,
      partner: partner.name,
      status: a.status as 'approved' | 'rejected',
      live_key_id: a.liveKeyId,
      scopes: a.liveScopes,
      reason: a.rejectionReason,
      emailed_to: partner.contactEmail,
      changed,
      emailKey: partner.contactEmail ? emailKey : null,
    });
    const repo = tx.getRepository(PartnerApplication);
    if (decision.approve) {
      if (app.status === 'approved') return answer(app, false);
      if (!['verified', 'live_requested', 'rejected'].includes(app.status)) throw new OnboardingRefused(`${partnerName}'s application is ${app.status}: nothing to approve`);
      const scopes = decision.scopes ?? SANDBOX_SCOPES;
      if (scopes.includes('refer') && !partner.affiliateAccountId) throw new OnboardingRefused(`the refer scope needs an affiliate account (partner update --affiliate-account)`);
      const issued = await credentials.issue({ partnerId: partner.id, environment: 'live', scopes }, tx);
      await repo.update(
        { id: app.id },
        { status: 'approved', liveScopes: scopes, liveKeyId: issued.keyId, decidedAt: () => 'now()', liveRevealedAt: null, history: appendStep(app.history, step('approved', operator, `live credential ${issued.keyId}, scopes ${scopes.join(',')}`)) },
      );
      const key = `live-approved:${app.id}`;
      if (partner.contactEmail) await queueEmail(tx, { key, kind: 'live_approved', to: partner.contactEmail, data: { applicationId: app.id, companyName: app.companyName, scopes } });
      return answer(await repo.findOneByOrFail({ id: app.id }), true, key);
    }
    if (app.status === 'rejected') return answer(app, false);
    if (app.status === 'approved') throw new OnboardingRefused(`${partnerName} is already live: revoke its live credential instead (credential revoke)`);
    if (!['verified', 'live_requested'].includes(app.status)) throw new OnboardingRefused(`${partnerName}'s application is ${app.status}: nothing to reject`);
    const rejections = app.history.filter((s) => s.step === 'rejected').length;
    await repo.update({ id: app.id }, { status: 'rejected', rejectionReason: decision.reason, decidedAt: () => 'now()', history: appendStep(app.history, step('rejected', operator, decision.reason)) });
    const key = `live-rejected:${app.id}:${rejections + 1}`;
    if (partner.contactEmail) await queueEmail(tx, { key, kind: 'live_rejected', to: partner.contactEmail, data: { companyName: app.companyName, reason: decision.reason } });
    return answer(await repo.findOneByOrFail({ id: app.id }), true, key);
  });
}

/** The approval's link opened: the live credential's secret, this once. */
export async function revealLiveCredential(dataSource: DataSource, credentials: CredentialService, applicationId: string): Promise<RevealOutcome> {
  return dataSource.transaction(async (tx) => {
    const app = await lockApplication(tx, { id: applicationId });
    if (!app || app.status !== 'approved' || !app.liveKeyId || !app.decidedAt) return { ok: false, reason: 'unknown' };
    if (app.liveRevealedAt) return { ok: false, reason: 'used' };
    if (Date.now() - app.decidedAt.getTime() > LIVE_LINK_MS) return { ok: false, reason: 'expired' };
    const credential = await tx.getRepository(Credential).findOneBy({ keyId: app.liveKeyId });
    if (!credential || credential.revokedAt) return { ok: false, reason: 'unknown' };
    const partner = await tx.getRepository(Partner).findOneByOrFail({ id: app.partnerId! });
    await tx.getRepository(PartnerApplication).update({ id: app.id }, { liveRevealedAt: () => 'now()', history: appendStep(app.history, step('live_credential_shown', app.contactEmail ?? partner.name)) });
    return { ok: true, partnerName: partner.name, keyId: credential.keyId, secret: credentials.openSecret(credential), scopes: credential.scopes };
  });
}

/** Seven days unverified: the application expires (unless the row moved on; its status is answered). */
export async function expireApplication(dataSource: DataSource, applicationId: string): Promise<ApplicationStatus> {
  return dataSource.transaction(async (tx) => {
    const app = await lockApplication(tx, { id: applicationId });
    if (!app) return 'expired';
    if (app.status !== 'applied') return app.status;
    await tx.getRepository(PartnerApplication).update({ id: app.id }, { status: 'expired', history: appendStep(app.history, step('expired', 'service', 'not verified within 7 days')) });
    return 'expired';
  });
}

/** A live request waiting 2 days: marked reminded (the operators' gauge and alert); its status is answered. */
export async function remindOfLiveRequest(dataSource: DataSource, applicationId: string): Promise<ApplicationStatus> {
  return dataSource.transaction(async (tx) => {
    const app = await lockApplication(tx, { id: applicationId });
    if (!app) return 'expired';
    if (app.status === 'live_requested' && !app.remindedAt) {
      await tx.getRepository(PartnerApplication).update({ id: app.id }, { remindedAt: () => 'now()', history: appendStep(app.history, step('operators_reminded', 'service', 'waiting for a decision for 2 days')) });
    }
    return app.status;
  });
}

/** Live requests the operators were reminded of and have not decided: the gauge. */
export async function overdueLiveRequests(dataSource: DataSource): Promise<number> {
  return dataSource.getRepository(PartnerApplication).createQueryBuilder('a').where("a.status = 'live_requested' AND a.reminded_at IS NOT NULL").getCount();
}

export interface ApplicationView {
  application_id: string;
  origin: 'page' | 'operator';
  company_name: string;
  contact_email: string | null;
  website: string | null;
  description: string | null;
  merchant_of_record: boolean;
  status: ApplicationStatus;
  partner: string | null;
  checklist: Checklist | null;
  live_scopes: string[] | null;
  live_key_id: string | null;
  rejection_reason: string | null;
  created_at: string;
  verified_at: string | null;
  live_requested_at: string | null;
  reminded_at: string | null;
  decided_at: string | null;
  history: ApplicationStep[];
}

/** Applications and live requests, newest first; a waiting request's checklist as it is now. */
export async function listApplications(dataSource: DataSource, status?: ApplicationStatus): Promise<ApplicationView[]> {
  const rows = await dataSource.getRepository(PartnerApplication).find({ where: status ? { status } : {}, order: { createdAt: 'DESC' }, take: 500 });
  const partnerIds = rows.map((a) => a.partnerId).filter((id): id is string => !!id);
  const partners = new Map((partnerIds.length ? await dataSource.getRepository(Partner).findBy({ id: In(partnerIds) }) : []).map((p) => [p.id, p]));
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return Promise.all(
    rows.map(async (a) => {
      const partner = a.partnerId ? partners.get(a.partnerId) : undefined;
      const checklist = a.status === 'live_requested' && partner ? await checklistOf(dataSource.manager, partner) : (a.checklist as Checklist | null);
      return {
        application_id: a.id,
        origin: a.origin,
        company_name: a.companyName,
        contact_email: a.contactEmail,
        website: a.website,
        description: a.description,
        merchant_of_record: a.merchantOfRecord,
        status: a.status,
        partner: partner?.name ?? null,
        checklist,
        live_scopes: a.liveScopes,
        live_key_id: a.liveKeyId,
        rejection_reason: a.rejectionReason,
        created_at: a.createdAt.toISOString(),
        verified_at: iso(a.verifiedAt),
        live_requested_at: iso(a.liveRequestedAt),
        reminded_at: iso(a.remindedAt),
        decided_at: iso(a.decidedAt),
        history: a.history,
      };
    }),
  );
}
