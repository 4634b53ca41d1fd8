#!/usr/bin/env node
/**
 * `npm run --silent admin -- …` (or `partner-api-admin …`, the package's bin, from the built code
 * alone): the operators' command line. Every change it makes is recorded with the operator who
 * made it (src/admin/audit.ts). Every command takes `--json` for
 * scripts; progress goes to stderr so stdout holds only the answer.
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import type { DataSource } from 'typeorm';
import { linksBaseUrl, loadConfig, type Environment } from '../config';
import { CredentialService } from '../auth/credentials';
import { SecretBox } from '../auth/secret-box';
import { parseScopes, SCOPES, type Scope } from '../auth/scopes';
import type { Credential } from '../db/entities/credential';
import type { Partner } from '../db/entities/partner';
import { importInventory, parseInventoryCsv } from '../discovery/inventory';
import { createPartner, findOrCreatePartner, findPartnerByName, listPartners, updatePartner } from '../partners/partners';
import { openProjectDatabase, resolveMasterKey } from '../main/runtime';
import { recordTransferOutcome, refundByService } from './orders';
import { runPayoutsNow } from './finance';
import { moveCase, revokeCaseLink } from './brokerage';
import { CASE_STATUSES, isCaseStatus } from '../../workflows/brokerage-messages';
import { reconcile } from '../finance/reconcile';
import { openDisputes } from '../checkout/disputes';
import { patchUse, withTemporal } from './temporal';
import { promoteDeployment, rampDeployment, rollbackDeployment, type DeployMove } from './deploy';
import { deploymentOf, deployStatus, type Deployment, type DeployVersion } from '../temporal/deployment';
import { quotasOf, setQuotas } from '../partners/quotas';
import { rotateSealedSecrets } from './keys';
import { endpointState, recentDeliveries } from './webhooks';
import { isRecorded, operatorName, outcomeOf, recentActions, recordAttempt, recordOutcome, type Attempt } from './audit';
import { decideLiveAccess, listApplications, OnboardingRefused, SANDBOX_SCOPES } from '../partners/onboarding';
import { tellOnboarding } from '../partners/onboarding-flow';
import { OnboardingLinkToken, onboardingUrl } from '../partners/onboarding-links';
import { startEmailsOf } from '../mail/start';
import type { ApplicationStatus } from '../db/entities/partner-application';

const APPLICATION_STATUSES = ['applied', 'expired', 'verified', 'live_requested', 'approved', 'rejected'] as const;
import { SearchClient } from '../search/search-client';
import type { Client } from '@temporalio/client';

interface Session {
  dataSource: DataSource;
  credentials: CredentialService;
  secretBox: SecretBox;
}

/** Opens the database (starting the embedded one if nothing runs it), runs `work`, closes it. */
async function withSession<T>(work: (s: Session) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const quiet = () => undefined;
  const masterKey = resolveMasterKey(config, (m) => process.stderr.write(`${m}\n`));
  const { dataSource, postgres } = await openProjectDatabase(config, quiet);
  try {
    return await work({ dataSource, credentials: new CredentialService(dataSource, new SecretBox(masterKey), 0), secretBox: new SecretBox(masterKey) });
  } finally {
    await dataSource.destroy();
    await postgres.stop();
  }
}

/**
 * An operator's decision on a request for live access: recorded (with its emails queued) in one
 * transaction, then its workflow told and its email's workflow started. With Temporal away, the
 * decision stands: the recovery sweep sends the email within a minute, and the workflow's
 * reminder reads the row.
 */
async function decide(dataSource: DataSource, credentials: CredentialService, secretBox: SecretBox, partnerName: string, decision: Parameters<typeof decideLiveAccess>[3]) {
  let answer: Awaited<ReturnType<typeof decideLiveAccess>>;
  try {
    answer = await decideLiveAccess(dataSource, credentials, partnerName, decision, operatorName());
  } catch (err) {
    if (err instanceof OnboardingRefused) throw new Error(err.message);
    throw err;
  }
  const { applicationId, changed, emailKey, ...shown } = answer;
  const config = loadConfig();
  if (changed) {
    try {
      await withTemporal(config, async (client) => {
        const workflows = { client, taskQueue: config.temporal.taskQueue };
        await tellOnboarding(workflows, applicationId, answer.status);
        if (emailKey) await startEmailsOf(workflows, dataSource, [emailKey]);
      });
    } catch (err) {
      process.stderr.write(`the decision is recorded; Temporal could not be told now (${(err as Error).message}): the email goes within a minute of Temporal being back\n`);
    }
  }
  // Nobody to email (a partner created by an operator without a contact): the single-use link is
  // answered to the operator, to hand over; it shows the secret once, as the email's would.
  const revealUrl = answer.status === 'approved' && !answer.emailed_to ? onboardingUrl(linksBaseUrl(config), 'live', OnboardingLinkToken.of(secretBox).sign(applicationId, 'live')) : null;
  return { application_id: applicationId, ...shown, ...(revealUrl ? { reveal_url: revealUrl } : {}) };
}

function output(json: boolean, value: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text}\n`);
}

function environmentOption(value: string): Environment {
  if (value !== 'sandbox' && value !== 'live') throw new InvalidArgumentError('sandbox or live');
  return value;
}

function bpsOption(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 10_000) throw new InvalidArgumentError('basis points, 0 to 10000');
  return n;
}

function quotaOption(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('a whole number of at least 1');
  return n;
}

function rateOption(value: string): number | null {
  if (value === 'default') return null;
  const n = Number(value);
  if (!(n > 0)) throw new InvalidArgumentError('a positive number of requests per second, or "default"');
  // The bucket (rate × burst multiplier) must hold one request, or the credential could never be admitted.
  const burst = loadConfig().rateLimits.burstMultiplier;
  if (n * burst < 1) throw new InvalidArgumentError(`at least ${1 / burst} per second (one request per bucket of ${burst} s, RATE_LIMIT_BURST_MULTIPLIER)`);
  return n;
}

function scopesOption(value: string): Scope[] {
  let scopes: Scope[];
  try {
    scopes = parseScopes(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  // A credential without a scope could call nothing: an empty list is a slip, not a choice.
  if (scopes.length === 0) throw new InvalidArgumentError('at least one scope');
  return scopes;
}

/** A partner's name: printable, not blank, at most 200 characters (trimmed). */
/** A count from 1 to `max`. */
function countOption(max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new InvalidArgumentError(`1 to ${max}`);
    return n;
  };
}

function emailOption(value: string): string {
  const email = value.trim();
  if (email.length > 254 || !/^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/.test(email)) throw new InvalidArgumentError('an email address, like ops@partner.example');
  return email;
}

function nameOption(value: string): string {
  const name = value.trim();
  // Cc: control characters; Cf: invisible format ones (zero-width space, right-to-left override) that make look-alike names.
  if (!name || name.length > 200 || /[\p{Cc}\p{Cf}]/u.test(name)) throw new InvalidArgumentError('a name of 1 to 200 printable characters');
  return name;
}

function partnerJson(p: Partner) {
  return {
    partner_id: p.id,
    name: p.name,
    merchant_of_record: p.merchantOfRecord,
    commission_bps: {
      partner_collected: p.commissionPartnerCollectedBps,
      service_collected: p.commissionServiceCollectedBps,
      brokerage: p.commissionBrokerageBps,
      referral: p.commissionReferralBps,
    },
    affiliate_account: p.affiliateAccountId,
    contact_email: p.contactEmail,
    created_at: p.createdAt.toISOString(),
  };
}

function credentialJson(c: Credential, partnerName?: string) {
  return {
    key_id: c.keyId,
    partner: partnerName ?? c.partner?.name,
    environment: c.environment,
    scopes: c.scopes,
    rate_limit_per_second: c.rateLimitPerSecond,
    created_at: c.createdAt.toISOString(),
    revoked_at: c.revokedAt ? c.revokedAt.toISOString() : null,
  };
}

const program = new Command().name('admin').description('Operator commands for the partner API').showHelpAfterError();

const partner = program.command('partner').description('partners and their terms');
partner
  .command('create')
  .requiredOption('--name <name>', 'unique partner name', nameOption)
  .option('--not-merchant-of-record', 'the partner sells only through hosted checkout')
  .option('--partner-collected-bps <bps>', 'commission on partner-collected sales', bpsOption)
  .option('--service-collected-bps <bps>', 'commission on service-collected sales', bpsOption)
  .option('--brokerage-bps <bps>', 'share of brokerage deals', bpsOption)
  .option('--referral-bps <bps>', 'commission on referred hosted-checkout sales', bpsOption)
  .option('--affiliate-account <id>', 'link an affiliate account (enables referral endpoints)')
  .option('--contact-email <email>', "where the service writes to the partner (live access, a failing webhook endpoint)", emailOption)
  .option('--json', 'JSON output')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      if (await findPartnerByName(dataSource, o.name)) throw new Error(`partner ${o.name} already exists`);
      const p = await createPartner(dataSource, o.name, {
        merchantOfRecord: !o.notMerchantOfRecord,
        commissionPartnerCollectedBps: o.partnerCollectedBps,
        commissionServiceCollectedBps: o.serviceCollectedBps,
        commissionBrokerageBps: o.brokerageBps,
        commissionReferralBps: o.referralBps,
        affiliateAccountId: o.affiliateAccount ?? null,
        contactEmail: o.contactEmail ?? null,
      });
      output(o.json, partnerJson(p), `created partner ${p.name} (${p.id})`);
    }),
  );
partner
  .command('update')
  .description('change terms from now on (recorded sales keep the rate fixed on them)')
  .requiredOption('--name <name>', 'the partner', nameOption)
  .option('--merchant-of-record', 'the partner may sell with quotes and orders')
  .option('--not-merchant-of-record', 'the partner sells only through hosted checkout')
  .option('--partner-collected-bps <bps>', 'commission on partner-collected sales', bpsOption)
  .option('--service-collected-bps <bps>', 'commission on service-collected sales', bpsOption)
  .option('--brokerage-bps <bps>', 'share of brokerage deals', bpsOption)
  .option('--referral-bps <bps>', 'commission on referred hosted-checkout sales', bpsOption)
  .option('--affiliate-account <id>', 'link an affiliate account ("none" unlinks it)')
  .option('--contact-email <email>', 'where the service writes to the partner ("none" removes it)', (v: string) => (v === 'none' ? 'none' : emailOption(v)))
  .option('--json', 'JSON output')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      if (o.merchantOfRecord && o.notMerchantOfRecord) throw new Error('--merchant-of-record and --not-merchant-of-record contradict each other');
      const p = await updatePartner(dataSource, o.name, {
        merchantOfRecord: o.merchantOfRecord ? true : o.notMerchantOfRecord ? false : undefined,
        commissionPartnerCollectedBps: o.partnerCollectedBps,
        commissionServiceCollectedBps: o.serviceCollectedBps,
        commissionBrokerageBps: o.brokerageBps,
        commissionReferralBps: o.referralBps,
        affiliateAccountId: o.affiliateAccount === undefined ? undefined : o.affiliateAccount === 'none' ? null : o.affiliateAccount,
        contactEmail: o.contactEmail === undefined ? undefined : o.contactEmail === 'none' ? null : o.contactEmail,
      });
      if (!p) throw new Error(`no partner named ${o.name}`);
      output(o.json, partnerJson(p), `updated partner ${p.name}`);
    }),
  );
partner
  .command('list')
  .option('--json', 'JSON output')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      const all = await listPartners(dataSource);
      output(o.json, all.map(partnerJson), all.map((p) => `${p.name}\t${p.id}\tmerchant_of_record=${p.merchantOfRecord}`).join('\n') || '(no partners)');
    }),
  );

partner
  .command('quota')
  .description("a partner's quotas in one environment: active quotes and open brokerage cases (CONTRACT §15); without a limit given, shows them")
  .requiredOption('--partner <name>', 'the partner', nameOption)
  .requiredOption('--env <env>', 'sandbox or live', environmentOption)
  .option('--active-quotes <k>', 'active quotes it may hold', quotaOption)
  .option('--open-cases <k>', 'open brokerage cases it may hold', quotaOption)
  .option('--json', 'JSON output')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      const p = await findPartnerByName(dataSource, o.partner);
      if (!p) throw new Error(`no partner named ${o.partner}`);
      const defaults = loadConfig().quotas;
      const quotas =
        o.activeQuotes === undefined && o.openCases === undefined
          ? await quotasOf(dataSource.manager, defaults, p.id, o.env)
          : await setQuotas(dataSource, defaults, p.id, o.env, { activeQuotes: o.activeQuotes, openCases: o.openCases });
      output(o.json, { partner: p.name, environment: o.env, ...quotas }, `${p.name} (${o.env}): ${quotas.active_quotes} active quotes, ${quotas.open_cases} open cases`);
    }),
  );

partner
  .command('applications')
  .description("partners' applications and requests for live access, newest first, each with its checklist and history (CONTRACT §16)")
  .option('--status <status>', APPLICATION_STATUSES.join(' | '), (value: string) => {
    if (!(APPLICATION_STATUSES as readonly string[]).includes(value)) throw new InvalidArgumentError(APPLICATION_STATUSES.join(', '));
    return value as ApplicationStatus;
  })
  .option('--json', 'JSON output')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      const all = await listApplications(dataSource, o.status);
      const line = (a: (typeof all)[number]) =>
        `${a.application_id}\t${a.status}\t${a.partner ?? a.company_name}\t${a.contact_email ?? '-'}${a.checklist ? `\t${a.checklist.map((c) => `${c.item}=${c.done ? 'done' : 'not yet'}`).join(' ')}` : ''}`;
      output(o.json, all, all.map(line).join('\n') || '(no applications)');
    }),
  );

partner
  .command('approve')
  .description("switches live access on: issues the live credential with the scopes given (the sandbox's by default) and emails the partner's contact a single-use link that shows it once")
  .requiredOption('--partner <name>', 'the partner', nameOption)
  .option('--scopes <list>', `comma-separated: ${SCOPES.join(', ')} (default ${SANDBOX_SCOPES.join(',')})`, scopesOption)
  .option('--json', 'JSON output')
  .action(async (o) =>
    withSession(async ({ dataSource, credentials, secretBox }) => {
      const answer = await decide(dataSource, credentials, secretBox, o.partner, { approve: true, ...(o.scopes ? { scopes: o.scopes } : {}) });
      output(o.json, answer, `${answer.partner}: approved, live credential ${answer.live_key_id}${answer.emailed_to ? `; the link to it is emailed to ${answer.emailed_to}` : ''}`);
    }),
  );

partner
  .command('reject')
  .description("refuses live access for now: the reason is emailed to the partner's contact; the sandbox keeps working, and an approval may follow later")
  .requiredOption('--partner <name>', 'the partner', nameOption)
  .requiredOption('--reason <text>', 'what the partner reads', (value: string) => {
    const reason = value.trim();
    if (!reason || reason.length > 2000) throw new InvalidArgumentError('1 to 2000 characters');
    return reason;
  })
  .option('--json', 'JSON output')
  .action(async (o) =>
    withSession(async ({ dataSource, credentials, secretBox }) => {
      const answer = await decide(dataSource, credentials, secretBox, o.partner, { approve: false, reason: o.reason });
      output(o.json, answer, `${answer.partner}: rejected${answer.emailed_to ? `; the reason is emailed to ${answer.emailed_to}` : ''}`);
    }),
  );

const credential = program.command('credential').description('API credentials');
credential
  .command('create')
  .requiredOption('--partner <name>', 'partner name (created with default terms if new)', nameOption)
  .requiredOption('--env <env>', 'sandbox or live', environmentOption)
  .requiredOption('--scopes <list>', 'comma-separated: search,embed,buy,broker,refer,report,webhook', scopesOption)
  .option('--rate-limit <perSecond>', 'sustained requests per second for this credential', rateOption)
  .option('--json', 'JSON output (the secret is shown this once)')
  .action(async (o) =>
    withSession(async ({ dataSource, credentials }) => {
      const { partner: p } = await findOrCreatePartner(dataSource, o.partner);
      const issued = await credentials.issue({ partnerId: p.id, environment: o.env, scopes: o.scopes, rateLimitPerSecond: o.rateLimit ?? null });
      output(
        o.json,
        { ...credentialJson(issued.credential, p.name), partner_id: p.id, secret: issued.secret },
        `key id: ${issued.keyId}\nsecret: ${issued.secret}\n(the secret is not shown again)`,
      );
    }),
  );
credential
  .command('list')
  .option('--partner <name>', 'only this partner', nameOption)
  .option('--json', 'JSON output')
  .action(async (o) =>
    withSession(async ({ dataSource, credentials }) => {
      const p = o.partner ? await findPartnerByName(dataSource, o.partner) : undefined;
      if (o.partner && !p) throw new Error(`no partner named ${o.partner}`);
      const rows = await credentials.list(p?.id);
      output(
        o.json,
        rows.map((c) => credentialJson(c)),
        rows.map((c) => `${c.keyId}\t${c.partner?.name}\t${c.environment}\t${c.scopes.join(',')}\t${c.revokedAt ? 'revoked' : 'active'}`).join('\n') || '(no credentials)',
      );
    }),
  );
credential
  .command('revoke')
  .argument('<key_id>')
  .option('--json', 'JSON output')
  .action(async (keyId: string, o) =>
    withSession(async ({ credentials }) => {
      const c = await credentials.revoke(keyId);
      if (!c) throw new Error(`no credential ${keyId}`);
      output(o.json, credentialJson(c), `revoked ${keyId}`);
    }),
  );
credential
  .command('rate-limit')
  .argument('<key_id>')
  .argument('<perSecond>', 'requests per second, or "default" for the environment default', rateOption)
  .option('--json', 'JSON output')
  .action(async (keyId: string, perSecond: number | null, o) =>
    withSession(async ({ credentials }) => {
      const c = await credentials.setRateLimit(keyId, perSecond);
      if (!c) throw new Error(`no credential ${keyId}`);
      output(o.json, credentialJson(c), `${keyId}: ${perSecond === null ? 'environment default' : `${perSecond}/s`}`);
    }),
  );

const order = program.command('order').description('orders and their transfers');
for (const outcome of ['completed', 'failed'] as const) {
  order
    .command(`transfer-${outcome}`)
    .description(`record that a live transfer carried out by hand ${outcome === 'completed' ? 'completed' : 'failed'}`)
    .argument('<public_id>', 'the order, ord_…')
    .option('--reason <text>', 'why (shown as the order\'s failure reason when it failed)')
    .option('--json', 'JSON output: the order after the change')
    .action(async (publicId: string, o) =>
      withSession(async ({ dataSource }) => {
        const view = await recordTransferOutcome(loadConfig(), dataSource, publicId, { outcome, reason: o.reason ?? null });
        output(o.json, view, `${view.public_id}: ${view.status}`);
      }),
    );
}

order
  .command('refund')
  .description('refund a service-collected sale (hosted checkout): stops the transfer, or reverses the completed sale in the ledger')
  .argument('<public_id>', 'the order, ord_…')
  .option('--reason <text>', 'why, kept on the refund')
  .option('--json', 'JSON output: the refund')
  .action(async (publicId: string, o) =>
    withSession(async ({ dataSource }) => {
      const { http_status: status, ...refund } = await refundByService(loadConfig(), dataSource, publicId, o.reason ?? null);
      output(o.json, refund, `${refund.refund_id}: ${refund.status}${status === 200 ? ' (already refunded)' : ''}`);
    }),
  );

const brokerage = program.command('brokerage').description('brokerage cases');
brokerage
  .command('move')
  .description('move a case to its next status (the move Update, as in the Temporal UI); a move the status order does not allow is refused with the reason')
  .argument('<case_id>', 'the case, brk_…')
  .requiredOption('--to <status>', CASE_STATUSES.join(' | '), (value: string) => {
    if (!isCaseStatus(value)) throw new InvalidArgumentError(CASE_STATUSES.join(', '));
    return value;
  })
  .option('--price-cents <n>', 'the agreed price (required with --to agreed)', (value: string) => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError('a positive whole number of cents');
    return n;
  })
  .option('--reason <text>', 'why (kept on the timeline; a closing reason is shown to the buyer)')
  .option('--json', 'JSON output: the case after the move')
  .action(async (casePublicId: string, o) =>
    withSession(async ({ dataSource, secretBox }) => {
      const view = await moveCase(loadConfig(), dataSource, secretBox, casePublicId, {
        to: o.to,
        ...(o.priceCents !== undefined ? { price_cents: o.priceCents } : {}),
        ...(o.reason !== undefined ? { reason: o.reason } : {}),
      });
      output(o.json, view, `${view.case_id}: ${view.status}`);
    }),
  );
brokerage
  .command('revoke-link')
  .description("revoke the buyer's progress link (every link given so far stops working); answers the case with its new link")
  .argument('<case_id>', 'the case, brk_…')
  .option('--json', 'JSON output: the case with its new progress_url')
  .action(async (casePublicId: string, o) =>
    withSession(async ({ dataSource, secretBox }) => {
      const view = await revokeCaseLink(loadConfig(), dataSource, secretBox, casePublicId);
      output(o.json, view, `${view.case_id}: new progress link ${view.progress_url}`);
    }),
  );

program
  .command('payouts')
  .description('payouts to partners')
  .command('run')
  .description('pay now what is payable (what the month-end run does); answers the payouts made')
  .requiredOption('--env <env>', 'sandbox or live', environmentOption)
  .option('--json', 'JSON output: an array of payouts, as GET /payouts shows them')
  .action(async (o) => {
    const payouts = await runPayoutsNow(loadConfig(), o.env);
    output(o.json, payouts, payouts.map((p) => `${p.payout_id}\t${p.amount_cents} ${p.currency}`).join('\n') || '(nothing payable)');
  });

const workflowsCommand = program.command('workflows').description('the Temporal workflows behind the service');
workflowsCommand
  .command('patches')
  .description('per workflow type and patch id, the runs (open, or closed within retention) that still need it, and whether it may be deprecated or removed')
  .option('--json', 'JSON output: an array of { workflow_type, patch_id, open_runs, open_runs_patched, open_runs_before_patch, runs_before_patch, deprecated_in, deprecation_shipped, runs_before_deprecation, retirable, verdict }')
  .action(async (o) => {
    const uses = await withSession(({ dataSource }) => withTemporal(loadConfig(), (client) => patchUse(client, dataSource)));
    output(o.json, uses, uses.map((u) => `${u.workflow_type}\t${u.patch_id}\t${u.verdict}`).join('\n'));
  });

const deployCommand = program.command('deploy').description('worker releases under Worker Versioning: their versions, and ramping, promoting or rolling back one (docs/operators/runbook.md)');
const deployment = (): Deployment => deploymentOf(loadConfig());
const versionLine = (v: DeployVersion) =>
  `${v.build_id}\t${v.status}${v.ramp_percent !== null ? ` ${v.ramp_percent}%` : ''}\t${v.pollers} poller(s)\t${v.pinned_open_runs} pinned open run(s)`;
/** One move of the deployment, printed with the versions after it. */
async function deployMove(json: boolean, move: (client: Client) => Promise<DeployMove>): Promise<void> {
  const moved = await withTemporal(loadConfig(), move);
  output(json, moved, [moved.done, ...moved.status.versions.map(versionLine)].join('\n'));
}
deployCommand
  .command('status')
  .description('the versions of the worker deployment, newest first: status, ramp, pollers and pinned open runs')
  .option('--json', 'JSON output: { deployment, current_build_id, ramping_build_id, ramp_percent, versions: [ { build_id, status, ramp_percent, created_at, last_current_at, pollers, pinned_open_runs } ] }')
  .action(async (o) => {
    const status = await withTemporal(loadConfig(), (client) => deployStatus(client, deployment()));
    output(o.json, status, status.versions.map(versionLine).join('\n') || 'no version has polled yet');
  });
deployCommand
  .command('ramp')
  .description('send a share of new runs to the release being rolled out (its worker polling beside the current one)')
  .argument('<percent>', 'share of new runs, 0 to 100', (v) => {
    const n = Number(v);
    if (!/^\d+(\.\d+)?$/.test(v) || n > 100) throw new InvalidArgumentError('a percentage from 0 to 100');
    return n;
  })
  .option('--json', 'JSON output: { move, done, status }')
  .action((percent: number, o) => deployMove(o.json, (client) => rampDeployment(client, deployment(), percent)));
deployCommand
  .command('promote')
  .description('make the release being rolled out current: every new run goes to it; runs pinned to the previous one stay there')
  .option('--json', 'JSON output: { move, done, status }')
  .action((o) => deployMove(o.json, (client) => promoteDeployment(client, deployment())));
deployCommand
  .command('rollback')
  .description('withdraw a ramp, or make the previously current version current again (its worker must still poll)')
  .option('--json', 'JSON output: { move, done, status }')
  .action((o) => deployMove(o.json, (client) => rollbackDeployment(client, deployment())));

program
  .command('reconcile')
  .description('recompute every settlement, payout, total and balance from the ledger; exit 1 listing each difference')
  .option('--env <env>', 'sandbox or live (default: both)', environmentOption)
  .option('--json', 'JSON output')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      const report = await reconcile(dataSource, o.env);
      const text = report.ok
        ? `ledger reconciles: ${JSON.stringify(report.checked)}`
        : report.differences.map((d) => `${d.kind} ${d.id} ${d.field}: stored ${d.stored}, ledger says ${d.from_ledger}`).join('\n');
      output(o.json, report, text);
      if (!report.ok) throw new Error(`the ledger does not reconcile: ${report.differences.length} difference(s)`);
    }),
  );

program
  .command('disputes')
  .description('card disputes (chargebacks) of live checkout sales')
  .command('list')
  .description('the disputes still open, oldest first: order, amount, reason, since when')
  .option('--env <env>', 'sandbox or live (default: both)', environmentOption)
  .option('--json', 'JSON output: [ { dispute_id, order_id, partner_id, environment, status, amount_cents, currency, reason, opened_at } ]')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      const open = await openDisputes(dataSource, o.env);
      output(o.json, open, open.length ? open.map((d) => `${d.dispute_id}\t${d.order_id}\t${d.environment}\t${d.amount_cents} ${d.currency}\t${d.reason ?? ''}\tsince ${d.opened_at}`).join('\n') : 'no open disputes');
    }),
  );

const webhooksCommand = program.command('webhooks').description("partners' webhook endpoints and deliveries");
webhooksCommand
  .command('list')
  .description("the partner's endpoint in the environment and how far delivery has got")
  .requiredOption('--partner <name>', 'partner name', nameOption)
  .requiredOption('--env <env>', 'sandbox or live', environmentOption)
  .option('--json', 'JSON output: { partner, environment, url, enabled, delivered_through_seq, last_event_seq, deliveries: { pending, delivered, failed }, updated_at }')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      const e = await endpointState(dataSource, o.partner, o.env);
      output(
        o.json,
        e,
        `${e.partner} ${e.environment}: ${e.url ?? '(no endpoint)'}${e.enabled ? '' : ' (disabled)'}; delivered through #${e.delivered_through_seq} of #${e.last_event_seq}; ` +
          `${e.deliveries.pending} pending, ${e.deliveries.delivered} delivered, ${e.deliveries.failed} failed`,
      );
    }),
  );
webhooksCommand
  .command('deliveries')
  .description("the partner's most recent deliveries, newest first: event, attempts, last error")
  .requiredOption('--partner <name>', 'partner name', nameOption)
  .requiredOption('--env <env>', 'sandbox or live', environmentOption)
  .option('--status <status>', 'only pending, delivered or failed ones', (v: string) => {
    if (v !== 'pending' && v !== 'delivered' && v !== 'failed') throw new InvalidArgumentError('pending, delivered or failed');
    return v;
  })
  .option('--limit <n>', 'how many (default 20, at most 500)', countOption(500))
  .option('--json', 'JSON output: an array of { event_id, event_type, status, attempts, last_error, last_attempt_at, finished_at }')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      const list = await recentDeliveries(dataSource, o.partner, o.env, { limit: o.limit ?? 20, status: o.status });
      output(o.json, list, list.map((d) => `${d.event_id}	${d.event_type ?? '?'}	${d.status}	${d.attempts} attempt(s)${d.last_error ? `	${d.last_error}` : ''}`).join('\n') || '(no deliveries)');
    }),
  );

program
  .command('keys')
  .description('the master keyring (MASTER_KEY)')
  .command('rotate')
  .description('seal every stored secret again under the current (highest) MASTER_KEY version; safe to repeat and while the service runs')
  .option('--json', 'JSON output: { current_version, credentials: { resealed, already_current }, webhook_endpoints: { … } }')
  .action(async (o) =>
    withSession(async ({ dataSource, secretBox }) => {
      const r = await rotateSealedSecrets(dataSource, secretBox);
      output(
        o.json,
        r,
        `sealed under version ${r.current_version}: credentials ${r.credentials.resealed} resealed, ${r.credentials.already_current} already current; ` +
          `webhook endpoints ${r.webhook_endpoints.resealed} resealed, ${r.webhook_endpoints.already_current} already current`,
      );
    }),
  );

program
  .command('inventory')
  .description('the domain inventory')
  .command('import')
  .requiredOption('--env <env>', 'sandbox or live', environmentOption)
  .requiredOption('--file <csv>', 'CSV with the columns of data/sandbox-domains.csv')
  .option('--json', 'JSON output')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      const rows = parseInventoryCsv(readFileSync(o.file, 'utf8'));
      const s = await importInventory(dataSource, o.env, rows);
      output(o.json, s, `${s.environment}: ${s.rows} rows, ${s.inserted} new, ${s.updated} updated`);
    }),
  );

program
  .command('search')
  .description('the search engine (its process answers on SEARCH_URL)')
  .command('reindex')
  .description('SEARCH_ENGINE=opensearch: build a new index of the mapping in the repo from the inventory (vectors kept), catch it up, move the alias to it and drop the old one; searches answer throughout')
  .option('--json', 'JSON output: { alias, index, previous, names: { sandbox, live }, seconds }')
  .action(async (o) => {
    const search = new SearchClient(loadConfig().search.url);
    try {
      const r = (await search.reindex()) as { alias: string; index: string; previous?: string; names: Record<string, number>; seconds: number };
      output(o.json, r, `${r.alias} → ${r.index} (was ${r.previous ?? 'none'}): ${Object.entries(r.names).map(([e, n]) => `${e} ${n} names`).join(', ')} in ${r.seconds} s`);
    } finally {
      search.close();
    }
  });

program
  .command('audit')
  .description('the manual acts recorded, newest first: who (ADMIN_OPERATOR, else the OS user), which command, with what')
  .option('--limit <n>', 'how many (default 50, at most 1000)', countOption(1000))
  .option('--json', 'JSON output: an array of { operator, command, arguments, at, outcome, error }, outcome being succeeded, refused, failed or unfinished')
  .action(async (o) =>
    withSession(async ({ dataSource }) => {
      const acts = await recentActions(dataSource, o.limit ?? 50);
      output(o.json, acts, acts.map((a) => `${a.at}\t${a.operator}\t${a.command}\t${JSON.stringify(a.arguments)}\t${a.outcome}${a.error ? `: ${a.error}` : ''}`).join('\n') || '(nothing recorded)');
    }),
  );

// Every command that changes something is recorded before it acts, with who runs it; its outcome
// (succeeded, refused with the reason, failed) is appended once it is known.
let attempt: Attempt | undefined;
program.hook('preAction', async (_root, action) => {
  const names: string[] = [];
  for (let c: Command | null = action; c && c !== program; c = c.parent) names.unshift(c.name());
  const command = names.join(' ');
  const args = { ...action.opts(), ...(action.args.length ? { args: action.args } : {}) };
  if (!isRecorded(command, args)) return;
  // In production the log must name a person: in a container the OS user is always `node`.
  if (loadConfig().production && !process.env.ADMIN_OPERATOR?.trim()) throw new Error('set ADMIN_OPERATOR to your name: every change is recorded with the operator who made it');
  attempt = await withSession(({ dataSource }) => recordAttempt(dataSource, command, args));
});
program.hook('postAction', async () => {
  if (!attempt) return;
  const done = attempt;
  attempt = undefined;
  await withSession(({ dataSource }) => recordOutcome(dataSource, done, 'succeeded')).catch((err: Error) =>
    process.stderr.write(`admin: done, but its outcome is not recorded in the operators' log: ${err.message}\n`),
  );
});

program.parseAsync().catch(async (err) => {
  process.stderr.write(`admin: ${(err as Error).message}\n`);
  // A command recorded as started, then stopped: refused with its reason, or failed (a part broke or did not answer).
  if (attempt) {
    const stopped = attempt;
    await withSession(({ dataSource }) => recordOutcome(dataSource, stopped, outcomeOf(err), (err as Error).message)).catch(() => undefined);
  }
  process.exit(1);
});
