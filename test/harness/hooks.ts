import { startStack, stopStack } from './stack';

/** Mocha root hooks: the real stack comes up once before every test file and goes down after the last. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    // The first run on a machine may build the Temporal binary from Go (minutes).
    this.timeout(15 * 60_000);
    await startStack();
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(60_000);
    await stopStack();
  },
};
