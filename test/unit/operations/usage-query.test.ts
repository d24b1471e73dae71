import assert from 'node:assert/strict';
import { parseUsageQuery } from '../../../operations/usage';
import { refusal } from './refusal';

/**
 * Issue 53 item 5: `GET /v1/usage`'s query as OpenAI's SDKs send it (`group_by[]=…`, read by Koa as the key
 * `group_by[]`) and its `api_key_ids` and `models` filters, in every spelling; each bad value is 400 naming its
 * parameter.
 */

const START = '1764547200';
const q = (extra: Record<string, string | string[]>): Record<string, string | string[]> => ({ start_time: START, ...extra });

describe('GET /v1/usage query: group_by[] and the api_key_ids / models filters', () => {
  const now = new Date('2025-12-02T00:00:00Z');

  it('reads group_by[] as the SDKs send it, once or repeated, alone or beside group_by', () => {
    const by = (query: Record<string, string | string[]>): string[] =>
      parseUsageQuery(q(query), now).groupBy.map((d) => (d.by === 'metadata' ? `metadata.${d.key}` : d.by));
    assert.deepEqual(by({ 'group_by[]': ['mode', 'key'] }), ['mode', 'key']);
    assert.deepEqual(by({ 'group_by[]': 'mode' }), ['mode']);
    assert.deepEqual(by({ group_by: 'mode,lane', 'group_by[]': 'metadata.project' }), ['mode', 'lane', 'metadata.project']);
    assert.deepEqual(by({ group_by: ['tier', 'user'] }), ['tier', 'user']);
    assert.deepEqual(by({}), []);
  });

  it('refuses a bad or repeated group_by[] naming group_by', () => {
    const queries: Record<string, string | string[]>[] = [
      { 'group_by[]': ['mode', 'model'] },
      { 'group_by[]': 'mode', group_by: 'mode' },
      { 'group_by[]': '' },
    ];
    for (const query of queries) {
      const err = refusal(() => parseUsageQuery(q(query), now));
      assert.deepEqual([err.code, err.param], ['invalid_request', 'group_by'], JSON.stringify(query));
    }
  });

  it('reads api_key_ids and models in every spelling, merged and without repeats', () => {
    const r = parseUsageQuery(
      q({
        api_key_ids: 'key_a,key_b',
        'api_key_ids[]': ['key_c', 'key_a'],
        'models[]': ['QRM:PANL', 'QRM:XPRS'],
        models: 'quorum-panel',
      }),
      now,
    );
    assert.deepEqual(r.apiKeyIds, ['key_a', 'key_b', 'key_c']);
    assert.deepEqual(r.models, ['quorum-panel', 'QRM:PANL', 'QRM:XPRS']);
    assert.deepEqual(parseUsageQuery(q({ 'api_key_ids[]': 'key_x' }), now).apiKeyIds, ['key_x']);
    // Not sent: no filter (every key, every mode), not an empty one.
    const plain = parseUsageQuery(q({}), now);
    assert.equal('apiKeyIds' in plain, false);
    assert.equal('models' in plain, false);
  });

  it('takes an id of no key or mode as a filter (it matches nothing), not as an error', () => {
    assert.deepEqual(parseUsageQuery(q({ api_key_ids: 'key_nobody' }), now).apiKeyIds, ['key_nobody']);
    assert.deepEqual(parseUsageQuery(q({ models: 'NOPE:NONE' }), now).models, ['NOPE:NONE']);
  });

  it('refuses an empty, overlong, unstorable or too-many value naming the parameter', () => {
    for (const param of ['api_key_ids', 'models'] as const) {
      for (const value of ['', 'a,,b', 'x'.repeat(201), 'key_\u0000', Array.from({ length: 101 }, (_, i) => `v${i}`).join(',')]) {
        for (const spelling of [param, `${param}[]`]) {
          const err = refusal(() => parseUsageQuery(q({ [spelling]: value }), now));
          assert.deepEqual([err.code, err.param], ['invalid_request', param], `${spelling}=${value.slice(0, 20)}`);
        }
      }
    }
  });

  it("refuses OpenAI's parameters Quorum does not have, and other bracketed keys, by name", () => {
    for (const param of ['project_ids', 'user_ids[]', 'models[0]', 'group_by[x]']) {
      const err = refusal(() => parseUsageQuery(q({ [param]: 'a' }), now));
      assert.deepEqual([err.code, err.param], ['invalid_request', param]);
    }
  });
});
