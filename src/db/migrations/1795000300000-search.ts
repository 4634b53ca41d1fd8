import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What search needs at a million names.
 *
 * `changed_xid`: the id of the transaction that last wrote a domain row, set by a trigger. The
 * in-memory search index follows the inventory by reading the rows with `changed_xid` at or
 * above the oldest transaction still running at its previous read (`pg_snapshot_xmin`): every
 * change it has not seen yet is among them, whatever order transactions commit in.
 *
 * Keyword candidates come from trigram and full-text indexes per environment over the names on
 * the market only, so a sandbox search never walks a million live names.
 */
export class Search1795000300000 implements MigrationInterface {
  name = 'Search1795000300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE domains ADD COLUMN changed_xid xid8 NOT NULL DEFAULT pg_current_xact_id()`);
    await q.query(`
      CREATE FUNCTION domains_mark_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.changed_xid := pg_current_xact_id();
        RETURN NEW;
      END $$`);
    await q.query(`CREATE TRIGGER domains_mark_changed BEFORE INSERT OR UPDATE ON domains FOR EACH ROW EXECUTE FUNCTION domains_mark_changed()`);
    await q.query(`CREATE INDEX domains_changed_idx ON domains (environment, changed_xid)`);
    await q.query(`DROP INDEX domains_label_trgm_idx`);
    await q.query(`DROP INDEX domains_search_document_idx`);
    for (const environment of ['sandbox', 'live']) {
      const onMarket = `environment = '${environment}' AND status IN ('listed', 'reserved')`;
      await q.query(`CREATE INDEX domains_${environment}_label_trgm_idx ON domains USING gin (label gin_trgm_ops) WHERE ${onMarket}`);
      await q.query(`CREATE INDEX domains_${environment}_document_idx ON domains USING gin (search_document) WHERE ${onMarket}`);
      await q.query(`CREATE INDEX domains_${environment}_label_idx ON domains (label) WHERE ${onMarket}`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const environment of ['sandbox', 'live']) {
      await q.query(`DROP INDEX domains_${environment}_label_trgm_idx`);
      await q.query(`DROP INDEX domains_${environment}_document_idx`);
      await q.query(`DROP INDEX domains_${environment}_label_idx`);
    }
    await q.query(`CREATE INDEX domains_label_trgm_idx ON domains USING gin (label gin_trgm_ops)`);
    await q.query(`CREATE INDEX domains_search_document_idx ON domains USING gin (search_document)`);
    await q.query(`DROP INDEX domains_changed_idx`);
    await q.query(`DROP TRIGGER domains_mark_changed ON domains`);
    await q.query(`DROP FUNCTION domains_mark_changed()`);
    await q.query(`ALTER TABLE domains DROP COLUMN changed_xid`);
  }
}
