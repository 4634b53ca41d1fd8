import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { Credential } from './entities/credential';
import { Domain } from './entities/domain';
import { Partner } from './entities/partner';
import { Foundation1795000000000 } from './migrations/1795000000000-foundation';
import { Orders1795000100000 } from './migrations/1795000100000-orders';
import { Webhooks1795000200000 } from './migrations/1795000200000-webhooks';
import { Search1795000300000 } from './migrations/1795000300000-search';
import { Hardening1795000500000 } from './migrations/1795000500000-hardening';

export const entities = [Partner, Credential, Domain];
export const migrations = [Foundation1795000000000, Orders1795000100000, Webhooks1795000200000, Search1795000300000, Hardening1795000500000];

/** A data source over `url`; schema changes only through migrations, never synchronize. */
export function createDataSource(url: string, options: { poolSize?: number } = {}): DataSource {
  return new DataSource({
    type: 'postgres',
    url,
    entities,
    migrations,
    migrationsRun: false,
    synchronize: false,
    logging: ['error'],
    // Word-similarity matches (typo tolerance in search) start at 0.45 rather than pg_trgm's 0.6.
    extra: { max: options.poolSize ?? 10, options: '-c pg_trgm.word_similarity_threshold=0.45' },
  });
}

/** Connects and applies pending migrations; returns the names applied now. */
export async function openDatabase(url: string, options: { poolSize?: number } = {}): Promise<DataSource> {
  const dataSource = createDataSource(url, options);
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  return dataSource;
}
