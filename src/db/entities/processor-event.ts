import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A card processor's event, once handled (its id is the processor's): a replay changes nothing. */
@Entity({ name: 'processor_events' })
export class ProcessorEvent {
  @PrimaryColumn({ name: 'event_id', type: 'text' })
  eventId: string;

  @Column({ type: 'text' })
  processor: string;

  @Column({ type: 'text' })
  type: string;

  /** What handling it did (recordHostedPayment's outcome, or `ignored`). */
  @Column({ type: 'text' })
  outcome: string;

  @Column({ name: 'handled_at', type: 'timestamptz', default: () => 'now()' })
  handledAt: Date;
}
