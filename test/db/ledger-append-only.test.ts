import assert from 'node:assert/strict';
import { LedgerEntry } from '../../src/db/entities/ledger-entry';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { buy, fulfilmentResult } from '../helpers/orders';

/** Runs `change` in a transaction that is always rolled back, so a guard that failed cannot cost the suite its ledger. */
async function attempt(change: (runner: import('typeorm').QueryRunner) => Promise<unknown>): Promise<unknown> {
  const runner = getStack().dataSource.createQueryRunner();
  await runner.startTransaction();
  try {
    return await change(runner);
  } finally {
    await runner.rollbackTransaction();
    await runner.release();
  }
}

describe('the ledger is append-only, and says so (CONTRACT §8)', () => {
  ownTemporal();
  let partnerId: string;
  const entries = () => getStack().dataSource.createQueryBuilder().select(['l.id AS id', 'l.amount_cents AS amount_cents']).from('ledger_entries', 'l').where('l.partner_id = :partnerId', { partnerId }).orderBy('l.id').getRawMany();

  before(async () => {
    const partner = await newPartner({ scopes: ['buy'] });
    partnerId = partner.partnerId;
    assert.equal((await fulfilmentResult((await buy(partner.client)).public_id)).status, 'TRANSFER_COMPLETED');
    assert.equal((await entries()).length, 3, 'the sale booked its entries');
  });

  it('UPDATE of an entry raises', async () => {
    const before = await entries();
    await assert.rejects(
      attempt((r) => r.manager.createQueryBuilder().update(LedgerEntry).set({ amountCents: 0 }).where('partner_id = :partnerId', { partnerId }).execute()),
      /ledger_entries is append-only: UPDATE refused/,
    );
    assert.deepEqual(await entries(), before);
  });

  it('DELETE of an entry raises', async () => {
    const before = await entries();
    await assert.rejects(
      attempt((r) => r.manager.createQueryBuilder().delete().from('ledger_entries').where('partner_id = :partnerId', { partnerId }).execute()),
      /ledger_entries is append-only: DELETE refused/,
    );
    assert.deepEqual(await entries(), before);
  });

  it('TRUNCATE raises', async () => {
    await assert.rejects(
      attempt((r) => r.clearTable('ledger_entries')),
      /ledger_entries is append-only: TRUNCATE refused/,
    );
    assert.equal((await entries()).length, 3);
  });
});
