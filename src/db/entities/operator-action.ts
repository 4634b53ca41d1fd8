import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One manual act of an operator through the admin CLI (a refund, a transfer outcome, a move, a key rotation…), recorded when it succeeded. */
@Entity({ name: 'operator_actions' })
export class OperatorAction {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  /** Who: ADMIN_OPERATOR, else the OS user who ran the command (SUDO_USER under sudo). */
  @Column({ type: 'text' })
  operator: string;

  /** The command, e.g. `order refund`. */
  @Column({ type: 'text' })
  command: string;

  /** Its arguments and options as given (never a secret: no command takes one). */
  @Column({ type: 'jsonb' })
  arguments: Record<string, unknown>;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  at: Date;
}
