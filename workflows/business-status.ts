/** A workflow's business status, as operators filter it in the Temporal UI. */
import { upsertSearchAttributes } from '@temporalio/workflow';
import { BusinessStatus, BusinessStatusSince } from './search-attributes';

/** Sets BusinessStatus and stamps BusinessStatusSince with the workflow's clock. */
export function showBusinessStatus(status: string): void {
  upsertSearchAttributes([
    { key: BusinessStatus, value: status },
    { key: BusinessStatusSince, value: new Date() },
  ]);
}
