import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';

export const INDEXED_VALUE_TYPE: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  DATETIME: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
};

/** Registers the project's search attributes on a server that lacks them (the time-skipping server, a fresh cluster). */
export async function registerSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const searchAttributes: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const key of ALL_SEARCH_ATTRIBUTES) searchAttributes[key.name] = INDEXED_VALUE_TYPE[key.type];
  await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
}
