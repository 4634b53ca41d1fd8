/** Email (CONTRACT §16): sending one queued email, giving up on one; onboarding's timers' steps. */
import type { Transporter } from 'nodemailer';
import { SecretBox } from '../src/auth/secret-box';
import { DEFAULT_MAIL_FROM } from '../src/config';
import { ProgressLinkToken } from '../src/brokerage/progress-token';
import { markEmailFailed, sendQueuedEmail, type MailDeps } from '../src/mail/send';
import { OnboardingLinkToken } from '../src/partners/onboarding-links';
import { expireApplication, remindOfLiveRequest } from '../src/partners/onboarding';
import { emailsSent } from '../src/metrics/metrics';
import type { ActivityDeps } from './deps';
import { log } from '@temporalio/activity';

/** The mail settings the worker gives its activities. */
export interface ActivityMail {
  /** SMTP; none configured: each email waits (its activity retries) until one is. */
  transport?: Transporter;
  from: string;
  publicBaseUrl: string;
}

export function createMailActivities(deps: ActivityDeps) {
  const box = new SecretBox(deps.masterKey);
  const mail: MailDeps = {
    dataSource: deps.dataSource,
    transport: deps.mail?.transport,
    from: deps.mail?.from ?? DEFAULT_MAIL_FROM,
    publicBaseUrl: deps.mail?.publicBaseUrl ?? 'http://localhost:3000',
    onboardingLinks: OnboardingLinkToken.of(box),
    progressToken: new ProgressLinkToken(box.deriveKeys('brokerage-progress-token')),
  };
  return {
    /** Sends the email unless it was sent already; throws (retried with back-off) while the mail server does not take it. */
    async sendEmail(input: { emailId: string }): Promise<string> {
      const outcome = await sendQueuedEmail(mail, input.emailId);
      emailsSent.inc({ outcome });
      return outcome;
    },

    async markEmailFailed(input: { emailId: string; error: string }): Promise<void> {
      await markEmailFailed(deps.dataSource, input.emailId, input.error);
      emailsSent.inc({ outcome: 'gave_up' });
      log.error('an email was given up after 3 days of failed attempts', { email_id: input.emailId, error: input.error });
    },

    /** The application's 7 days are over: expired unless verified meanwhile (its status is answered). */
    async expireApplication(input: { applicationId: string }): Promise<string> {
      return expireApplication(deps.dataSource, input.applicationId);
    },

    /** A live request has waited 2 days: the operators are reminded (gauge partner_api_live_requests_overdue). */
    async remindOfLiveRequest(input: { applicationId: string }): Promise<string> {
      const status = await remindOfLiveRequest(deps.dataSource, input.applicationId);
      if (status === 'live_requested') log.warn('a request for live access has waited 2 days for an operator', { application_id: input.applicationId });
      return status;
    },
  };
}
