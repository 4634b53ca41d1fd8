/**
 * The registrar port: everything fulfilment asks of the registrars that hold the domain. The
 * sandbox adapter behaves like one (work takes time, some calls fail for a while, some fail for
 * good); a live adapter implements the same interface against a real registrar's API (EPP or
 * the registrar's REST API) and is chosen per environment in createActivities.
 *
 * Sandbox inputs, read from the order's external_payment_ref:
 *  - contains `fail_transfer`   -> the registry rejects the transfer request: TRANSFER_FAILED
 *  - contains `stall_transfer`  -> the registry never confirms: TRANSFER_FAILED after 5 days
 *  - contains `flaky_registrar` -> every registrar call fails twice, then succeeds (retries show
 *                                   in the Temporal UI)
 *  - anything else              -> TRANSFER_COMPLETED about 30 s after the order
 */
import type { DataSource } from 'typeorm';
import { modifiedRows } from '../db/query';
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
  cancelTransfer(order: TransferOrder, attempt: number): Promise<void>;
}

/** Polls after which the sandbox registry confirms a transfer. */
const SANDBOX_POLLS_TO_COMPLETE = 2;

export class SandboxRegistrar implements RegistrarPort {
  constructor(private readonly dataSource: DataSource) {}

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
    await this.dataSource.query(
      `INSERT INTO sandbox_registrar_transfers (order_id, transfer_ref, state) VALUES ($1, $2, 'pending') ON CONFLICT (order_id) DO NOTHING`,
      [order.orderId, publicId('trf')],
    );
    const [row] = (await this.dataSource.query('SELECT transfer_ref FROM sandbox_registrar_transfers WHERE order_id = $1', [order.orderId])) as Array<{ transfer_ref: string }>;
    return row.transfer_ref;
  }

  async checkTransfer(order: TransferOrder, attempt: number): Promise<TransferState> {
    this.flaky(order, attempt, 'transfer status');
    const stalls = order.externalPaymentRef.includes('stall_transfer');
    const [row] = await modifiedRows<{ state: TransferState }>(
      this.dataSource,
      `UPDATE sandbox_registrar_transfers
       SET polls = polls + 1,
           state = CASE WHEN state = 'pending' AND NOT $2 AND polls + 1 >= $3 THEN 'completed' ELSE state END
       WHERE order_id = $1 RETURNING state`,
      [order.orderId, stalls, SANDBOX_POLLS_TO_COMPLETE],
    );
    if (!row) throw new TransferRejected(`no transfer was requested for order ${order.orderId}`);
    return row.state;
  }

  async cancelTransfer(order: TransferOrder, attempt: number): Promise<void> {
    this.flaky(order, attempt, 'cancel');
    await this.dataSource.query(`UPDATE sandbox_registrar_transfers SET state = 'cancelled' WHERE order_id = $1 AND state = 'pending'`, [order.orderId]);
  }
}
