import assert from 'node:assert/strict';
import { ClickRecorder } from '../../src/referral/clicks';
import type { DataSource } from 'typeorm';

/** A flood of /r/ never grows a process's memory without bound (issue: safe for strangers, part 2). */
describe('referral clicks: the in-memory queue has a cap', () => {
  it('while the database does not answer, clicks beyond the cap are dropped and counted; once it answers, the held ones are written', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const written: unknown[] = [];
    // A database that takes every upsert but answers only when let go; each click has its own visitor (its own row).
    const slow = { query: async (_sql: string, columns: unknown[][]) => { await gate; written.push(...columns[0]); } } as unknown as DataSource;
    const recorder = new ClickRecorder(slow, undefined, 10, 500, 2_000);
    const click = { linkId: 'l', partnerId: 'p', environment: 'sandbox' as const, visitorHash: 'v', day: '2026-11-25', clickedAt: new Date() };
    for (let i = 0; i < 5_000; i++) recorder.record({ ...click, visitorHash: `v${i}` });
    assert.equal(recorder.dropped, 3_000);
    release();
    await recorder.flush();
    assert.equal(written.length, 2_000);
    recorder.record(click);
    await recorder.flush();
    assert.equal(written.length, 2_001, 'room again once written');
  });
});
