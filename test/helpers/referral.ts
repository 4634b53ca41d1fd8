import { Partner } from '../../src/db/entities/partner';
import { getStack, newPartner } from './stack';

/** A partner linked to an affiliate account (as `admin partner update --affiliate-account` does), with every scope. */
export async function affiliatePartner(referralBps = 500) {
  const partner = await newPartner();
  await getStack().dataSource.getRepository(Partner).update({ id: partner.partnerId }, { affiliateAccountId: `aff-${partner.partnerId}`, commissionReferralBps: referralBps });
  return partner;
}

/** Waits until `check` holds (clicks are written a moment after the redirect). */
export async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`never: ${what}`);
}

export const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';
