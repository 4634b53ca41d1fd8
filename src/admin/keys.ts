/**
 * `admin keys rotate`: seals every secret at rest (credential secrets, webhook signing secrets)
 * again under the keyring's current version (src/auth/secret-box.ts). Run it after adding a new
 * highest version to MASTER_KEY on every process; it is safe to run again and while the service
 * runs (each row is locked while it is sealed again; the secret itself does not change).
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { SecretBox } from '../auth/secret-box';
import { Credential } from '../db/entities/credential';
import { WebhookEndpoint } from '../db/entities/webhook-endpoint';
import { webhookSecretAad } from '../webhooks/endpoints';
import { ROW_LOCK } from '../db/row-lock';

const BATCH = 200;

export interface RotationReport {
  current_version: number;
  credentials: { resealed: number; already_current: number };
  webhook_endpoints: { resealed: number; already_current: number };
}

export async function rotateSealedSecrets(dataSource: DataSource, secretBox: SecretBox): Promise<RotationReport> {
  const report: RotationReport = {
    current_version: secretBox.currentVersion,
    credentials: { resealed: 0, already_current: 0 },
    webhook_endpoints: { resealed: 0, already_current: 0 },
  };
  const tally = (counts: { resealed: number; already_current: number }, resealed: boolean) => (resealed ? counts.resealed++ : counts.already_current++);

  // Credentials, in key order, a batch per transaction.
  for (let after = ''; ; ) {
    const batch: Credential[] = await dataSource.transaction(async (m: EntityManager) => {
      const rows = await m
        .getRepository(Credential)
        .createQueryBuilder('c')
        .where('c.key_id > :after', { after })
        .orderBy('c.key_id')
        .limit(BATCH)
        .setLock(ROW_LOCK)
        .getMany();
      for (const row of rows) {
        const stale = !secretBox.isCurrent(row.secretSealed, row.keyId);
        if (stale) await m.getRepository(Credential).update({ id: row.id }, { secretSealed: secretBox.seal(secretBox.open(row.secretSealed, row.keyId), row.keyId) });
        tally(report.credentials, stale);
      }
      return rows;
    });
    if (batch.length < BATCH) break;
    after = batch[batch.length - 1].keyId;
  }

  // Webhook endpoints: one row per partner and environment.
  const aad = (e: WebhookEndpoint) => webhookSecretAad(e.partnerId, e.environment);
  const keys = await dataSource.getRepository(WebhookEndpoint).find({ select: { partnerId: true, environment: true }, order: { partnerId: 'ASC', environment: 'ASC' } });
  for (let i = 0; i < keys.length; i += BATCH) {
    await dataSource.transaction(async (m) => {
      for (const key of keys.slice(i, i + BATCH)) {
        const row = await m
          .getRepository(WebhookEndpoint)
          .createQueryBuilder('w')
          .where('w.partner_id = :partnerId AND w.environment = :environment', key)
          .setLock(ROW_LOCK)
          .getOne();
        if (!row) continue;
        const reseal = (sealed: Buffer) => secretBox.seal(secretBox.open(sealed, aad(row)), aad(row));
        // The previous secret of a rotation still signing is sealed again too.
        const previousStale = !!row.previousSecretSealed && !secretBox.isCurrent(row.previousSecretSealed, aad(row));
        const stale = !secretBox.isCurrent(row.secretSealed, aad(row)) || previousStale;
        if (stale) {
          await m.getRepository(WebhookEndpoint).update(
            { partnerId: row.partnerId, environment: row.environment },
            { secretSealed: reseal(row.secretSealed), ...(previousStale ? { previousSecretSealed: reseal(row.previousSecretSealed!) } : {}) },
          );
        }
        tally(report.webhook_endpoints, stale);
      }
    });
  }
  return report;
}
