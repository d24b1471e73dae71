import assert from 'node:assert/strict';
import { QuorumError } from '../../../domain/errors';
import { parseRequest } from '../../../operations/requests/common';
import { formARequests } from '../../../operations/requests/a';
import { formBRequests } from '../../../operations/requests/b';
import { checkParameters } from '../../../operations/requests/openai-params';

/** Issue 40 item 4: OpenAI's parameters parsed into the one internal shape (`CallOptions`), or refused by name. */
const BASE = { model: 'QRM:PANL', messages: [{ role: 'user', content: 'Hi' }] };

function refusal(fn: () => unknown): QuorumError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof QuorumError, String(err));
    return err;
  }
  assert.fail('expected a refusal');
}

describe('OpenAI parameters: parsed into CallOptions or refused by name', () => {
  const parse = (body: Record<string, unknown>): ReturnType<typeof formBRequests.completion.parse> => {
    checkParameters(body, formBRequests.completionKeys);
    return parseRequest(formBRequests.completion, body);
  };

  it('every honoured parameter lands in one place; the smaller of the two output limits holds; a stop string is a list', () => {
    const body = parse({
      ...BASE,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
      max_tokens: 50,
      max_completion_tokens: 20,
      temperature: 0.2,
      top_p: 0.9,
      seed: 3,
      stop: 'END',
      user: 'u-1',
      metadata: { a: 'b' },
    });
    assert.deepEqual(body.options, {
      answer: {
        format: { type: 'json_schema', name: 'x', schema: { type: 'object' }, strict: false },
        maxOutputTokens: 20,
        sampling: { temperature: 0.2, topP: 0.9, seed: 3, stop: ['END'] },
      },
      user: 'u-1',
      metadata: { a: 'b' },
    });
  });

  it('none sent, or all null, or `response_format: text`: no options, so the call (and its derived key) is as before', () => {
    assert.equal(parse(BASE).options, undefined);
    assert.equal(parse({ ...BASE, temperature: null, tools: null, n: null, response_format: { type: 'text' } }).options, undefined);
  });

  it('refused and unknown keys name themselves; a value out of range names its field', () => {
    for (const [key, value, code] of [
      ['n', 2, 'unsupported_parameter'],
      ['tools', [], 'unsupported_parameter'],
      ['store', false, 'unsupported_parameter'],
      ['bogus_parameter', 1, 'unknown_parameter'],
    ] as const) {
      const err = refusal(() => parse({ ...BASE, [key]: value }));
      assert.deepEqual([err.code, err.param], [code, key]);
    }
    for (const [key, value] of [
      ['temperature', 3],
      ['stop', ['a', 'b', 'c', 'd', 'e']],
      ['metadata', Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']))],
      ['response_format', { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'no-such-type' } } }],
    ] as const) {
      const err = refusal(() => parse({ ...BASE, [key]: value }));
      assert.deepEqual([err.code, err.param], ['invalid_request', key]);
    }
  });

  it('Form A takes the same parameters and still ignores `tier`', () => {
    checkParameters({ ...BASE, tier: 'ultra', seed: 1 }, formARequests.completionKeys);
    const body = parseRequest(formARequests.completion, { ...BASE, model: 'quorum-panel', tier: 'ultra', seed: 1 });
    assert.equal(body.tier, undefined);
    assert.deepEqual(body.options, { answer: { sampling: { seed: 1 } } });
  });
});
