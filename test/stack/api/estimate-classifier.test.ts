import assert from 'node:assert/strict';
import { customMode } from '../deliberation/helpers';
import { systemModeConfig } from './fixtures';
import { call, newKey, newOrg, PANEL, startApi, USER, type Api } from './helpers';

describe('estimate: the same classifier as a real call', () => {
  let api: Api;
  before(async () => {
    api = await startApi('B');
  });
  after(() => api.close());

  it("asks the mode's classifier model when it names one, and the heuristic otherwise", async () => {
    const org = await newOrg();
    const key = await newKey(org.orgId, { limits: { requestsPerMinute: 1_000 } });
    const panel = systemModeConfig();
    const mode = await customMode(org.orgId, 'quorum-panel', { staff: { ...panel.staff, classifier: { engine: 'sim/alpha-experience' } } });
    const messages = USER('Compare two sorting algorithms step by step, with their trade-offs.');
    const byModel = await call(api, 'POST', '/v1/estimate', { key, body: { model: mode.ticker, messages } });
    assert.equal(byModel.status, 200, JSON.stringify(byModel.body));
    assert.equal((byModel.body.deliberation_value as { basis: string }).basis, 'model');
    const byHeuristic = await call(api, 'POST', '/v1/estimate', { key, body: { model: PANEL.B, messages } });
    assert.equal((byHeuristic.body.deliberation_value as { basis: string }).basis, 'heuristic');
  });
});
