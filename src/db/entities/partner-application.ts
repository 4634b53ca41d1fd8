import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type ApplicationStatus = 'applied' | 'expired' | 'verified' | 'live_requested' | 'approved' | 'rejected';

/** One step of an application, as recorded (the audit trail of onboarding). */
export interface ApplicationStep {
  step: string;
  at: string;
  by: string;
  detail?: string;
}

/**
 * A partner's way in (CONTRACT §16): an application from the public page, verified through the
 * emailed link (the partner and its sandbox credential are created then), a request for live
 * access, and an operator's decision. Partners an operator created by hand get a row when they
 * first ask for live access (no contact email: `origin` is `operator`). Its workflow is
 * `partner-onboarding:<id>`.
 */
@Entity({ name: 'partner_applications' })
export class PartnerApplication {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text', default: 'page' })
  origin: 'page' | 'operator';

  @Column({ name: 'company_name', type: 'text' })
  companyName: string;

  @Column({ name: 'contact_email', type: 'text', nullable: true })
  contactEmail: string | null;

  @Column({ type: 'text', nullable: true })
  website: string | null;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ name: 'merchant_of_record', type: 'boolean' })
  merchantOfRecord: boolean;

  @Column({ type: 'text' })
  status: ApplicationStatus;

  @Column({ name: 'partner_id', type: 'uuid', nullable: true, unique: true })
  partnerId: string | null;

  /** The checklist as it stood when live access was last asked for. */
  @Column({ type: 'jsonb', nullable: true })
  checklist: Array<{ item: string; done: boolean }> | null;

  @Column({ name: 'live_scopes', type: 'text', array: true, nullable: true })
  liveScopes: string[] | null;

  @Column({ name: 'live_key_id', type: 'text', nullable: true })
  liveKeyId: string | null;

  @Column({ name: 'rejection_reason', type: 'text', nullable: true })
  rejectionReason: string | null;

  @Column({ type: 'jsonb', default: () => "'[]'" })
  history: ApplicationStep[];

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'verified_at', type: 'timestamptz', nullable: true })
  verifiedAt: Date | null;

  @Column({ name: 'live_requested_at', type: 'timestamptz', nullable: true })
  liveRequestedAt: Date | null;

  /** When the operators were reminded of a live request waiting more than 2 days. */
  @Column({ name: 'reminded_at', type: 'timestamptz', nullable: true })
  remindedAt: Date | null;

  @Column({ name: 'decided_at', type: 'timestamptz', nullable: true })
  decidedAt: Date | null;

  /** When its workflow was started (null: the recovery sweep starts it). */
  @Column({ name: 'workflow_started_at', type: 'timestamptz', nullable: true })
  workflowStartedAt: Date | null;

  /** When the approval's link showed the live credential (it shows it once). */
  @Column({ name: 'live_revealed_at', type: 'timestamptz', nullable: true })
  liveRevealedAt: Date | null;
}
