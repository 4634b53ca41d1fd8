import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { canonicalQuery, canonicalString, computeSignature, queryPairs } from '../../src/auth/signing';
import { getStack } from '../helpers/stack';

/** Reads the `key: value` lines of the signing guide's example block (docs/partners/signing.md). */
function readmeExample(): Record<string, string> {
  const readme = readFileSync(path.join(getStack().config.projectRoot, 'docs/partners/signing.md'), 'utf8');
  const block = /<!-- signing-example -->\s*```text\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, 'docs/partners/signing.md has a signing example block');
  const values: Record<string, string> = {};
  for (const line of block[1].split('\n')) {
    const m = /^([a-z ]+?):\s+(.*)$/.exec(line);
    if (m) values[m[1]] = m[2];
  }
  return values;
}

describe('request signing (CONTRACT §1)', () => {
  it('the README example signature is what the signing code computes', () => {
    const ex = readmeExample();
    const [method, target] = ex.request.split(' ');
    const q = target.indexOf('?');
    const parts = {
      keyId: ex['key id'],
      timestamp: ex.timestamp,
      nonce: ex.nonce,
      method,
      path: q === -1 ? target : target.slice(0, q),
      query: queryPairs(q === -1 ? '' : target.slice(q + 1)),
      body: ex.body === '(empty)' ? '' : ex.body,
    };
    assert.equal(canonicalString(parts).split('\n').join(' | '), ex['canonical string']);
    assert.equal(`v1=${computeSignature(ex.secret, parts)}`, ex.signature);
  });

  it('canonical query percent-encodes per RFC 3986 and sorts by name then value', () => {
    assert.equal(canonicalQuery(queryPairs('q=coffee+shop&b=2&a=%7Etilde&b=1&z=%21')), 'a=~tilde&b=1&b=2&q=coffee%20shop&z=%21');
    assert.equal(canonicalQuery([['name', "it's (ok)*"]]), 'name=it%27s%20%28ok%29%2A');
    assert.equal(canonicalQuery([]), '');
  });

  it('the body hash is of the raw bytes, and of the empty string when there is no body', () => {
    const lines = canonicalString({ keyId: 'k', timestamp: '1', nonce: 'n', method: 'get', path: '/p', query: [], body: '' }).split('\n');
    assert.equal(lines[4], 'GET');
    assert.equal(lines[7], 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});
