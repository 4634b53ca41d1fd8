import { Partner } from '../../src/db/entities/partner';
import { getStack, newPartner } from './stack';

/** A partner linked to an affiliate account (as `admin partner update --affiliate-account` does), with every scope. */
export async function affiliatePartner(referralBps = 500) {
  const partner = await newPartner();
  await getStack().dataSource.getRepository(Partner).update({ id: partner.partnerId }, { affiliateAccountId: `aff-${partner.partnerId}`, commissionReferralBps: referralBps });
  return partner;
}

/** How long a click may take to be stored: clicks are written in batches, a moment after the redirect. */
export const CLICKS_STORED_MS = 10_000;

export const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';
