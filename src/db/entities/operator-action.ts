import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One manual act of an operator through the admin CLI or the Temporal UI (its gate) (a refund, a transfer outcome, a move, a key
 * rotation…): recorded before it acts, its outcome appended after. Append-only: a trigger refuses
 * UPDATE and DELETE to every role but the table's owner, and the app role holds neither.
 */
@Entity({ name: 'operator_actions' })
export class OperatorAction {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  /** Who: ADMIN_OPERATOR, else the OS user who ran the command (SUDO_USER under sudo); from the Temporal UI, the verified email and subject. */
  @Column({ type: 'text' })
  operator: string;

  /** The command, e.g. `order refund`. */
  @Column({ type: 'text' })
  command: string;

  /** Its arguments and options as given (no admin command takes a secret; a Temporal UI signal's arguments may hold a buyer's details). */
  @Column({ type: 'jsonb' })
  arguments: Record<string, unknown>;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  at: Date;

  /** `started` (recorded before the command acts), then its outcome in a row of its own: `succeeded`, `refused` (with the reason) or `failed`. */
  @Column({ type: 'text', default: 'succeeded' })
  outcome: 'started' | 'succeeded' | 'refused' | 'failed';

  /** On an outcome row: the `started` row it ends. */
  @Column({ name: 'attempt_id', type: 'bigint', nullable: true })
  attemptId: string | null;

  /** Why it was refused, or how it failed. */
  @Column({ type: 'text', nullable: true })
  error: string | null;
}
