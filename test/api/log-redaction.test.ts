import assert from 'node:assert/strict';
import { createLogger } from '../../src/logger';
import { getStack } from '../helpers/stack';

/** Logs never carry what a buyer gave (issue: safe to put in front of strangers, part 4). */
describe('logs: a buyer\'s details are redacted, also inside database errors', () => {
  it('a database error\'s parameters and detail, and buyer fields of a logged object, come out redacted', async () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
    const email = 'jane.buyer@example.com';
    const err = await getStack().dataSource.query('SELECT $1::int', [email]).then(() => undefined, (e: Error) => e);
    assert.ok(err, 'the query failed');
    logger.error({ err }, 'query failed');
    logger.info({ session: { buyer_email: email, card_number: '4242424242424242', registrant: { address: '1 Main St' } }, buyerName: 'Jane Buyer' }, 'paying');
    const out = lines.join('');
    for (const secret of [email, '4242424242424242', '1 Main St', 'Jane Buyer']) assert.ok(!out.includes(secret), `${secret} in ${out}`);
    assert.match(out, /\[redacted\]/);
  });
});
