/**
 * The row lock every step takes (`setLock(ROW_LOCK)`): FOR NO KEY UPDATE, not FOR UPDATE. Two steps
 * locking one row take turns either way; FOR UPDATE would also hold back the key-share lock with
 * which Postgres checks each foreign key naming the row, so a transaction writing a row that only
 * references it (an event's counter, an order's ledger lines) waited, and deadlocked when it held
 * what the locker wanted next (docs/design/architecture.md). The code never deletes a row it locks.
 */
export const ROW_LOCK = 'for_no_key_update' as const;
