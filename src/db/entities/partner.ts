import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** Defaults for a partner created without saying otherwise (CONTRACT §8), in basis points. */
export const DEFAULT_COMMISSION_BPS = {
  partnerCollected: 1500,
  serviceCollected: 1000,
  brokerage: 1000,
  referral: 500,
} as const;

@Entity({ name: 'partners' })
export class Partner {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text', unique: true })
  name: string;

  @Column({ name: 'merchant_of_record', type: 'boolean', default: true })
  merchantOfRecord: boolean;

  @Column({ name: 'commission_partner_collected_bps', type: 'integer' })
  commissionPartnerCollectedBps: number;

  @Column({ name: 'commission_service_collected_bps', type: 'integer' })
  commissionServiceCollectedBps: number;

  @Column({ name: 'commission_brokerage_bps', type: 'integer' })
  commissionBrokerageBps: number;

  /** Commission on referred hosted-checkout sales (CONTRACT §11). */
  @Column({ name: 'commission_referral_bps', type: 'integer' })
  commissionReferralBps: number;

  @Column({ name: 'affiliate_account_id', type: 'text', nullable: true })
  affiliateAccountId: string | null;

  /** Where the service writes to the partner (its application's contact email); null: nobody to email. */
  @Column({ name: 'contact_email', type: 'text', nullable: true })
  contactEmail: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
