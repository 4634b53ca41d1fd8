/**
 * The registrar port: everything fulfilment asks of the registrars that hold the domain, chosen
 * per environment in createActivities. The sandbox adapter simulates one and is used for sandbox
 * orders only. Live orders use a real adapter when one is configured; until then they have none
 * and their workflow waits for an operator to record each transfer's outcome (docs/partners/orders.md,
 * "Live transfers"). A real adapter (EPP over TLS to the registry, or a registrar's REST API)
 * implements this interface: throw TransferRejected for a final refusal, anything else for a
 * failure worth retrying, and answer `cancelTransfer` with what the registry says after the ask.
 *
 * Sandbox inputs, read from the order's external_payment_ref:
 *  - contains `fail_transfer`      -> the registry rejects the transfer request: TRANSFER_FAILED
 *  - contains `stall_transfer`     -> the registry never confirms: TRANSFER_FAILED after 5 days;
 *                                     a cancellation asked meanwhile is confirmed at once
 *  - contains `complete_on_cancel` -> the registry holds the transfer pending and completes it at
 *                                     the moment a cancellation arrives: a refund asked while the
 *                                     transfer is pending is refused and the order completes
 *  - contains `flaky_registrar`    -> every registrar call fails twice, then succeeds (retries show
 *                                     in the Temporal UI)
 *  - anything else                 -> TRANSFER_COMPLETED about 30 s after the order
 */
import type { DataSource } from 'typeorm';
import { SandboxTransfer } from '../db/entities/sandbox-transfer';
import { publicId } from '../ids';

export type TransferState = 'pending' | 'completed' | 'rejected' | 'cancelled';

/** A failure that retrying cannot fix; the workflow fails the transfer. */
export class TransferRejected extends Error {
  readonly name = 'TransferRejected';
}

/** A failure that may pass; the activity is retried with back-off. */
export class RegistrarUnavailable extends Error {
  readonly name = 'RegistrarUnavailable';
}

export interface TransferOrder {
  orderId: string;
  domain: string;
  externalPaymentRef: string;
}

export interface RegistrarPort {
  /** Locks the name at the seller's registrar so nothing changes it while it is handed over. */
  lockDomain(order: TransferOrder, attempt: number): Promise<void>;
  /** Obtains the auth code and asks the registry to move the name to the buyer; returns a transfer reference. */
  requestTransfer(order: TransferOrder, attempt: number): Promise<string>;
  checkTransfer(order: TransferOrder, attempt: number): Promise<TransferState>;
  /**
   * Asks the registry to stop the hand-over (cancel a requested transfer, unlock the name) and
   * answers where it stands: `cancelled` once stopped (also when nothing was requested yet),
   * `completed` when the registry finished the transfer first, `pending` while the cancellation
   * is not yet confirmed (the workflow then polls checkTransfer).
   */
  cancelTransfer(order: TransferOrder, attempt: number): Promise<TransferState>;
}

/** Polls after which the sandbox registry confirms a transfer. */
const SANDBOX_POLLS_TO_COMPLETE = 2;

export class SandboxRegistrar implements RegistrarPort {
  constructor(private readonly dataSource: DataSource) {}

  private get transfers() {
    return this.dataSource.getRepository(SandboxTransfer);
  }

  private flaky(order: TransferOrder, attempt: number, operation: string): void {
    if (order.externalPaymentRef.includes('flaky_registrar') && attempt <= 2) {
      throw new RegistrarUnavailable(`sandbox registrar unavailable during ${operation} (attempt ${attempt})`);
    }
  }

  async lockDomain(order: TransferOrder, attempt: number): Promise<void> {
    this.flaky(order, attempt, 'lock');
  }

  async requestTransfer(order: TransferOrder, attempt: number): Promise<string> {
    this.flaky(order, attempt, 'transfer request');
    if (order.externalPaymentRef.includes('fail_transfer')) {
      throw new TransferRejected(`the registry rejected the transfer of ${order.domain} (sandbox input fail_transfer)`);
    }
    await this.transfers.createQueryBuilder().insert().values({ orderId: order.orderId, transferRef: publicId('trf'), state: 'pending' }).orIgnore().execute();
    return (await this.transfers.findOneByOrFail({ orderId: order.orderId })).transferRef;
  }

  async checkTransfer(order: TransferOrder, attempt: number): Promise<TransferState> {
    this.flaky(order, attempt, 'transfer status');
    const holds = order.externalPaymentRef.includes('stall_transfer') || order.externalPaymentRef.includes('complete_on_cancel');
    const result = await this.transfers
      .createQueryBuilder()
      .update()
      .set({
        polls: () => 'polls + 1',
        state: () => `CASE WHEN state = 'pending' AND NOT :holds AND polls + 1 >= :enough THEN 'completed' ELSE state END`,
      })
      .setParameters({ holds, enough: SANDBOX_POLLS_TO_COMPLETE })
      .where('order_id = :orderId', { orderId: order.orderId })
      .returning(['state'])
      .execute();
    const row = (result.raw as Array<{ state: TransferState }>)[0];
    if (!row) throw new TransferRejected(`no transfer was requested for order ${order.orderId}`);
    return row.state;
  }

  async cancelTransfer(order: TransferOrder, attempt: number): Promise<TransferState> {
    this.flaky(order, attempt, 'cancel');
    const outcome = order.externalPaymentRef.includes('complete_on_cancel') ? 'completed' : 'cancelled';
    await this.transfers.update({ orderId: order.orderId, state: 'pending' }, { state: outcome });
    const transfer = await this.transfers.findOneBy({ orderId: order.orderId });
    return transfer?.state ?? 'cancelled';
  }
}
