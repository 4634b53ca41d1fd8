/**
 * Switching admission between Postgres and Redis safely: each store knows only the nonces it saw,
 * so an API process that starts with a store other than the one recorded in `admission_store`
 * starts a new crash epoch in its own store first (requests signed before now are refused once,
 * as after a crash) and records the switch. Every API process must use the same store: processes
 * with different stores running side by side would each admit a nonce once (README, Authentication).
 */
import type { DataSource } from 'typeorm';
import { AdmissionEpoch, AdmissionStore } from '../db/entities/admission';
import type { RedisAdmission } from './redis-admission';

export type AdmissionStoreName = AdmissionStore['store'];

/** Records `store` as the one deciding admission; returns whether it was a switch (a new epoch was started). */
export async function recordAdmissionStore(dataSource: DataSource, store: AdmissionStoreName, redis?: RedisAdmission): Promise<boolean> {
  return dataSource.transaction(async (m) => {
    const row = await m.getRepository(AdmissionStore).createQueryBuilder('s').setLock('pessimistic_write').getOne();
    if (row?.store === store) return false;
    if (store === 'redis') {
      if (!redis) throw new Error('switching admission to Redis needs its connection');
      await redis.startEpoch();
    } else {
      await m.getRepository(AdmissionEpoch).createQueryBuilder().update().set({ startedAt: () => 'clock_timestamp()' }).execute();
    }
    await m.getRepository(AdmissionStore).save({ singleton: true, store, switchedAt: new Date() });
    return true;
  });
}
