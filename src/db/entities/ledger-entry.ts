import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';
import { centsColumn } from '../columns';

/** An append-only movement of money on one of a partner's accounts (the database refuses edits). */
@Entity({ name: 'ledger_entries' })
export class LedgerEntry {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ name: 'posting_id', type: 'bigint' })
  postingId: string;

  @Column({ name: 'transaction_id', type: 'uuid', nullable: true })
  transactionId: string | null;

  @Column({ type: 'text' })
  account: string;

  @Column({ name: 'amount_cents', ...centsColumn })
  amountCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ name: 'reverses_entry_id', type: 'bigint', nullable: true })
  reversesEntryId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
