import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

export type SandboxTransferState = 'pending' | 'completed' | 'rejected' | 'cancelled';

/** The sandbox registry's record of a transfer it was asked to make (sandbox orders only). */
@Entity({ name: 'sandbox_registrar_transfers' })
export class SandboxTransfer {
  @PrimaryColumn({ name: 'order_id', type: 'uuid' })
  orderId: string;

  @Column({ name: 'transfer_ref', type: 'text', unique: true })
  transferRef: string;

  @Column({ type: 'text' })
  state: SandboxTransferState;

  @Column({ type: 'integer', default: 0 })
  polls: number;

  @CreateDateColumn({ name: 'requested_at', type: 'timestamptz' })
  requestedAt: Date;
}
