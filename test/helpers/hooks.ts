/** Mocha root hooks: the real stack comes up once before all tests and goes down after. */
import { bootStack, teardownStack } from './stack';

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(10 * 60 * 1000);
    await bootStack();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60 * 1000);
    await teardownStack();
  },
};
