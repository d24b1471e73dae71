import assert from 'node:assert/strict';
import { workflowBundle } from '../../../worker/workers';

/**
 * The worker's reusable V8 context evaluates the workflow bundle's modules again for every workflow it starts, so what
 * workflow code imports is paid on every deliberation: zod alone (for one reply of a run's judge) cost the worker
 * a third to a half of its CPU per express call (issue 16). Pure: bundles, runs nothing.
 */
describe('lint: the workflow bundle stays small', function () {
  this.timeout(120_000);

  it('carries no schema library', async () => {
    const { code } = await workflowBundle();
    const zod = code.match(/node_modules\/zod\//g) ?? [];
    assert.equal(zod.length, 0, 'zod is in the workflow bundle: validate replies in activities or by hand in workflow code');
  });
});
