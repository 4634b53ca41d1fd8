import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What keeps the order path right with money and names.
 *
 * `orders.commission_bps`: the partner's rate for the sale's payment model, fixed when the order
 * is recorded (existing orders take the rate their partner has now, the best that is known).
 *
 * `domains.held_by_order_id`: which order holds a sold name. Only that order may put the name
 * back on the market, and only while it still holds it; after a failed transfer relists the
 * name, a later refund of that order cannot touch another buyer's sale.
 */
export class OrderIntegrity1795000400000 implements MigrationInterface {
  name = 'OrderIntegrity1795000400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE orders ADD COLUMN commission_bps integer CHECK (commission_bps BETWEEN 0 AND 10000)`);
    await q.query(`
      UPDATE orders o SET commission_bps = CASE o.payment_model
        WHEN 'partner_collected' THEN p.commission_partner_collected_bps
        ELSE p.commission_service_collected_bps END
      FROM partners p WHERE p.id = o.partner_id`);
    await q.query(`ALTER TABLE orders ALTER COLUMN commission_bps SET NOT NULL`);

    await q.query(`ALTER TABLE domains ADD COLUMN held_by_order_id uuid UNIQUE REFERENCES orders(id)`);
    await q.query(`
      UPDATE domains d SET held_by_order_id = (
        SELECT o.id FROM orders o WHERE o.domain_id = d.id AND o.status NOT IN ('TRANSFER_FAILED', 'REFUNDED')
        ORDER BY o.created_at DESC LIMIT 1)
      WHERE d.status = 'sold'`);
    // A name held by an order is sold; the reverse is not required (an import may know sold names).
    await q.query(`ALTER TABLE domains ADD CONSTRAINT domains_held_is_sold CHECK (held_by_order_id IS NULL OR status = 'sold')`);
    await q.query(`ALTER TABLE domains ADD CONSTRAINT domains_reserved_has_quote CHECK (reserved_by_quote_id IS NULL OR status = 'reserved')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE domains DROP CONSTRAINT domains_reserved_has_quote`);
    await q.query(`ALTER TABLE domains DROP CONSTRAINT domains_held_is_sold`);
    await q.query(`ALTER TABLE domains DROP COLUMN held_by_order_id`);
    await q.query(`ALTER TABLE orders DROP COLUMN commission_bps`);
  }
}
