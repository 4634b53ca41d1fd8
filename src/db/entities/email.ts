import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type EmailStatus = 'pending' | 'sent' | 'failed';

/**
 * One email the service owes someone (CONTRACT §16), queued in the same transaction as the
 * business event it tells of and keyed by that event (`key`, unique): queued twice, it is one
 * email. Its sending is the `email:<id>` workflow's activity (src/mail/). It holds no secret: a
 * link that reveals one is signed when the email is sent, and works once.
 */
@Entity({ name: 'emails' })
export class Email {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /** The business event, e.g. `checkout-receipt:<session>`, `brokerage:<case>:<seq>`. */
  @Column({ type: 'text', unique: true })
  key: string;

  /** Which template: src/mail/templates.ts. */
  @Column({ type: 'text' })
  kind: string;

  @Column({ type: 'text' })
  recipient: string;

  /** The partner whose business it is (sandbox buyer emails are counted per partner), when there is one. */
  @Column({ name: 'partner_id', type: 'uuid', nullable: true })
  partnerId: string | null;

  /** What the template shows (never a secret). */
  @Column({ type: 'jsonb' })
  data: Record<string, unknown>;

  @Column({ type: 'text', default: 'pending' })
  status: EmailStatus;

  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  /** The Message-ID it went out with (the same on every attempt, so a mailbox can tell a repeat). */
  @Column({ name: 'message_id', type: 'text', nullable: true })
  messageId: string | null;

  /** An attempt is sending it until then (its lease); another attempt waits. */
  @Column({ name: 'sending_until', type: 'timestamptz', nullable: true })
  sendingUntil: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'sent_at', type: 'timestamptz', nullable: true })
  sentAt: Date | null;
}
