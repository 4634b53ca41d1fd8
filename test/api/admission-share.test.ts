import assert from 'node:assert/strict';
import { createApp } from '../../src/api/app';
import type { Admission, AdmissionRequest, AdmissionResult } from '../../src/auth/admission';
import { AdmissionBatcher } from '../../src/auth/admission';
import { ADMISSION_SHARE_PER_CREDENTIAL } from '../../src/api/middleware/authenticate';
import { getStack, listen, newPartner } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

/**
 * The real Postgres admission, held back until the test lets it go, so that requests pile up
 * waiting for it as they would behind a slow store.
 */
class HeldAdmission implements Admission {
  readonly makesReads = false;
  private release!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.release = resolve));
  waiting = 0;
  constructor(private readonly inner: Admission) {}
  async admit(request: AdmissionRequest): Promise<AdmissionResult> {
    this.waiting++;
    await this.gate;
    return this.inner.admit(request);
  }
  open(): void {
    this.release();
  }
}

/** One credential cannot take more than its share of a process's admission queue (issue: safe for strangers, part 3). */
describe('admission: a share of the queue per credential', function () {
  this.timeout(60_000);

  it(`a credential with ${ADMISSION_SHARE_PER_CREDENTIAL} requests waiting gets 429 for more; another credential still gets in line`, async () => {
    const s = getStack();
    const held = new HeldAdmission(new AdmissionBatcher(s.dataSource));
    const baseUrl = await listen(createApp({ ...s.appDeps, admission: held }));
    const flooder = await newPartner({ baseUrl });
    const other = await newPartner({ baseUrl });
    const flood = Array.from({ length: ADMISSION_SHARE_PER_CREDENTIAL }, () => flooder.client.get('/api/partner/v1/pricing?domain=academy.com'));
    await waitFor(() => held.waiting, (waiting) => waiting === ADMISSION_SHARE_PER_CREDENTIAL, 10_000, "the flood waiting for admission");
    const beyond = await flooder.client.get<{ error: { code: string } }>('/api/partner/v1/pricing?domain=academy.com');
    assert.equal(beyond.status, 429, beyond.text);
    assert.equal(beyond.body.error.code, 'rate_limited');
    assert.equal(beyond.headers.get('retry-after'), '1');
    const otherAnswer = other.client.get('/api/partner/v1/pricing?domain=academy.com');
    await waitFor(() => held.waiting, (waiting) => waiting === ADMISSION_SHARE_PER_CREDENTIAL + 1, 10_000, "the other credential's request waiting for admission");
    held.open();
    assert.equal((await otherAnswer).status, 200, 'the other credential was admitted');
    const statuses = (await Promise.all(flood)).map((r) => r.status);
    assert.deepEqual([...new Set(statuses)], [200], 'the waiting ones were admitted');
    assert.equal((await flooder.client.get('/api/partner/v1/pricing?domain=academy.com')).status, 200, 'its share is free again');
  });
});
