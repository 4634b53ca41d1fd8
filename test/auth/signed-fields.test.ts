import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SignedFields } from '../../src/auth/signed-fields';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const SHAPE = /^([a-z_0-9]+)\.(\d+)\.([A-Za-z0-9_-]{43})$/;
const message = ([id, n]: string[]) => `test|${id}|${n}`;

describe('signed fields (checkout pt, brokerage progress links, the attribution cookie)', () => {
  const signer = new SignedFields(randomBytes(32));

  it('opens what it sealed, and nothing with a changed field or another key', () => {
    const token = signer.seal(['cs_abc', '123'], message(['cs_abc', '123']));
    assert.deepEqual(signer.open(token, SHAPE, message), ['cs_abc', '123']);
    assert.equal(signer.open(token.replace('.123.', '.124.'), SHAPE, message), undefined);
    assert.equal(new SignedFields(randomBytes(32)).open(token, SHAPE, message), undefined);
  });

  it('refuses every other spelling of the signature, also those that decode to the same bytes', () => {
    for (let i = 0; i < 50; i++) {
      const fields = [`cs_${i}`, String(i)];
      const token = signer.seal(fields, message(fields));
      const last = ALPHABET.indexOf(token.at(-1)!);
      // The last of 43 characters carries 4 bits of the 32-byte MAC; its 2 low bits are spare.
      for (const spare of [1, 2, 3]) {
        const sameBytes = token.slice(0, -1) + ALPHABET[last ^ spare];
        assert.deepEqual(Buffer.from(sameBytes.split('.')[2], 'base64url'), Buffer.from(token.split('.')[2], 'base64url'));
        assert.equal(signer.open(sameBytes, SHAPE, message), undefined, sameBytes);
      }
    }
  });
});
