import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A change feed for the API processes' in-memory caches (bench/RESULTS.md): after a change to a
 * listing's answer (name, status, prices, currency) or to a credential commits, Postgres tells
 * every listening API process which rows changed, and each drops them from its cache.
 *
 * - `listing_changes`: one notification per statement, its payload `environment:name` lines; a
 *   statement that changed more than 100 names (an import) sends `*`, which empties the caches.
 *   Updates that leave the listing's columns as they were (search bookkeeping, timestamps) send
 *   nothing.
 * - `credential_changes`: the key id of each credential inserted, updated or deleted.
 *
 * Notifications are sent on commit, never for a rolled-back change.
 * Raw SQL: triggers and NOTIFY, which TypeORM entities do not express.
 */
export const LISTING_CHANNEL = 'listing_changes';
export const CREDENTIAL_CHANNEL = 'credential_changes';
/** Above this many names in one statement, the payload is `*`. */
export const LISTING_NOTIFY_MAX_NAMES = 100;
/** Above this many bytes of names, too (NOTIFY refuses 8,000 and fails the statement): from the listing-notify-size migration on. */
export const LISTING_NOTIFY_MAX_BYTES = 7_900;

/**
 * The listing trigger's function; `byteLimit` (the listing-notify-size migration) also sends `*`
 * when the names together pass LISTING_NOTIFY_MAX_BYTES, which NOTIFY would refuse.
 */
export function notifyListingChangesSql(byteLimit: boolean): string {
  const tooLong = byteLimit ? ` OR octet_length(array_to_string(v_names, E'\\n')) > ${LISTING_NOTIFY_MAX_BYTES}` : '';
  return `
      CREATE OR REPLACE FUNCTION notify_listing_changes() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        v_names text[];
      BEGIN
        IF TG_OP = 'INSERT' THEN
          SELECT array_agg(DISTINCT n.environment || ':' || n.name) INTO v_names FROM new_rows n;
        ELSIF TG_OP = 'DELETE' THEN
          SELECT array_agg(DISTINCT o.environment || ':' || o.name) INTO v_names FROM old_rows o;
        ELSE
          SELECT array_agg(DISTINCT x.v) INTO v_names FROM (
            SELECT o.environment || ':' || o.name AS v, n.environment || ':' || n.name AS w
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE (o.environment, o.name, o.status, o.buy_now_price_cents, o.floor_price_cents, o.currency)
                   IS DISTINCT FROM (n.environment, n.name, n.status, n.buy_now_price_cents, n.floor_price_cents, n.currency)
          ) c CROSS JOIN LATERAL (VALUES (c.v), (c.w)) AS x(v);
        END IF;
        IF v_names IS NULL THEN
          RETURN NULL;
        ELSIF array_length(v_names, 1) > ${LISTING_NOTIFY_MAX_NAMES}${tooLong} THEN
          PERFORM pg_notify('${LISTING_CHANNEL}', '*');
        ELSE
          PERFORM pg_notify('${LISTING_CHANNEL}', array_to_string(v_names, E'\\n'));
        END IF;
        RETURN NULL;
      END $$`;
}

export class ChangeFeed1795001400000 implements MigrationInterface {
  name = 'ChangeFeed1795001400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(notifyListingChangesSql(false));
    // A trigger with transition tables serves one event.
    await q.query(`CREATE TRIGGER domains_listing_inserted AFTER INSERT ON domains REFERENCING NEW TABLE AS new_rows
                   FOR EACH STATEMENT EXECUTE FUNCTION notify_listing_changes()`);
    await q.query(`CREATE TRIGGER domains_listing_updated AFTER UPDATE ON domains REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
                   FOR EACH STATEMENT EXECUTE FUNCTION notify_listing_changes()`);
    await q.query(`CREATE TRIGGER domains_listing_deleted AFTER DELETE ON domains REFERENCING OLD TABLE AS old_rows
                   FOR EACH STATEMENT EXECUTE FUNCTION notify_listing_changes()`);
    await q.query(`
      CREATE FUNCTION notify_credential_changes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('${CREDENTIAL_CHANNEL}', CASE WHEN TG_OP = 'DELETE' THEN OLD.key_id ELSE NEW.key_id END);
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER credentials_changed AFTER INSERT OR UPDATE OR DELETE ON credentials
                   FOR EACH ROW EXECUTE FUNCTION notify_credential_changes()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER credentials_changed ON credentials`);
    await q.query(`DROP FUNCTION notify_credential_changes()`);
    for (const t of ['inserted', 'updated', 'deleted']) await q.query(`DROP TRIGGER domains_listing_${t} ON domains`);
    await q.query(`DROP FUNCTION notify_listing_changes()`);
  }
}
