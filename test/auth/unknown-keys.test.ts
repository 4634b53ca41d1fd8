import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { CredentialService } from '../../src/auth/credentials';
import { SecretBox } from '../../src/auth/secret-box';
import { ChangeFeed } from '../../src/db/change-feed';
import { Credential } from '../../src/db/entities/credential';
import { getStack, newPartner } from '../helpers/stack';

/** A flood of made-up key ids (issue: safe to put in front of strangers, part 3). */
describe('unknown key ids: a negative cache of their own', () => {
  it('20,000 made-up key ids leave a real credential cached, and each is read from the database once', async () => {
    const s = getStack();
    const feed = ChangeFeed.forDataSource(s.dataSource);
    await feed.start();
    try {
      const service = new CredentialService(s.dataSource, new SecretBox(s.masterKey), 0, feed);
      const { keyId } = await newPartner();
      assert.equal((await service.resolve(keyId))?.keyId, keyId);
      const reads = { n: 0 };
      const repo = s.dataSource.getRepository(Credential);
      const findOne = repo.findOne.bind(repo);
      repo.findOne = (async (...args: Parameters<typeof findOne>) => {
        reads.n++;
        return findOne(...args);
      }) as typeof repo.findOne;
      try {
        const made = Array.from({ length: 20_000 }, () => `pk_test_${randomBytes(12).toString('hex')}`);
        for (const id of made) assert.equal(await service.resolve(id), undefined);
        assert.equal(reads.n, 20_000);
        // The last ids read: an id is held 10 s, and 20,000 reads one after another took longer
        // than that in a full run on a loaded host (the first 100 were read again).
        for (const id of made.slice(-100)) assert.equal(await service.resolve(id), undefined);
        assert.equal(reads.n, 20_000, 'asked again within seconds: no database read');
        assert.equal(service.peek(keyId)?.value?.keyId, keyId, 'the real credential is still held');
      } finally {
        repo.findOne = findOne;
      }
    } finally {
      await feed.close();
    }
  });
});
