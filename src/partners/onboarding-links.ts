/**
 * The signed links of onboarding (CONTRACT §16), made when their email is sent and never stored:
 *
 *   <application id>.<verify|live>.<base64url HMAC-SHA256 over "partner-onboarding.v1|<id>|<purpose>">
 *
 * under a key derived from MASTER_KEY for this purpose alone. The signature says which
 * application and what for; whether the link still works (within 24 hours of applying for
 * `verify`, 7 days of approval for `live`, and not used yet) is the application's state, so each
 * works once.
 */
import { SignedFields } from '../auth/signed-fields';
import type { SecretBox } from '../auth/secret-box';

export type LinkPurpose = 'verify' | 'live';

const SHAPE = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.(verify|live)\.([A-Za-z0-9_-]{43})$/;
const message = ([id, purpose]: string[]) => `partner-onboarding.v1|${id}|${purpose}`;

export class OnboardingLinkToken {
  private readonly signer: SignedFields;

  /** The token under its purpose's keys of the service's master keys. */
  static of(secretBox: Pick<SecretBox, 'deriveKeys'>): OnboardingLinkToken {
    return new OnboardingLinkToken(secretBox.deriveKeys('partner-onboarding-link'));
  }

  constructor(key: Buffer | readonly Buffer[]) {
    this.signer = new SignedFields(key);
  }

  sign(applicationId: string, purpose: LinkPurpose): string {
    const fields = [applicationId, purpose];
    return this.signer.seal(fields, message(fields));
  }

  /** The application a genuine token of `purpose` names; null otherwise. */
  verify(token: unknown, purpose: LinkPurpose): string | null {
    const fields = this.signer.open(token, SHAPE, message);
    return fields && fields[1] === purpose ? fields[0] : null;
  }
}

/** The page each link opens. */
export const ONBOARDING_PATHS: Record<LinkPurpose, string> = { verify: '/partners/verify', live: '/partners/live-credential' };

export function onboardingUrl(baseUrl: string, purpose: LinkPurpose, token: string): string {
  return `${baseUrl.replace(/\/$/, '')}${ONBOARDING_PATHS[purpose]}?t=${encodeURIComponent(token)}`;
}
