import assert from 'node:assert/strict';
import { QuorumError } from '../../../domain/errors';
import { parseRequest } from '../../../operations/requests/common';
import { formARequests } from '../../../operations/requests/a';
import { formBRequests } from '../../../operations/requests/b';
import { checkParameters } from '../../../operations/requests/openai-params';
import { parseResponseRequest } from '../../../operations/requests/responses';
import { derivedIdempotencyKey } from '../../../operations/completion';
import { CALLER_ANSWER_KINDS } from '../../../domain/aggregation';

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

describe('svc.answer_kind (issue 52): parsed into AnswerOptions.answerKind, or refused naming the values', () => {
  const FORMS = [
    ['A', formARequests, { ...BASE, model: 'quorum-panel' }],
    ['B', formBRequests, BASE],
  ] as const;

  for (const [form, requests, base] of FORMS) {
    it(`Form ${form}: each caller kind lands among the answer's options, beside OpenAI's; svc keeps the rest`, () => {
      for (const kind of CALLER_ANSWER_KINDS) {
        const body = parseRequest(requests.completion, { ...base, svc: { answer_kind: kind, other: 1 }, seed: 4 });
        assert.deepEqual(body.options, { answer: { sampling: { seed: 4 }, answerKind: { kind } } });
        assert.deepEqual(body.svc, { other: 1 });
      }
    });

    it(`Form ${form}: absent or null is no kind, and the call (its derived key) is as without it`, () => {
      assert.equal(parseRequest(requests.completion, { ...base, svc: { answer_kind: null } }).options, undefined);
      const plain = parseRequest(requests.completion, base);
      assert.equal(plain.options, undefined);
      assert.equal(plain.svc, undefined);
    });

    it(`Form ${form}: another value is 400 invalid_request naming svc.answer_kind and the values allowed`, () => {
      for (const bad of ['math', 'Number', 3, true, { kind: 'number' }]) {
        const err = refusal(() => parseRequest(requests.completion, { ...base, svc: { answer_kind: bad } }));
        assert.deepEqual([err.code, err.param, err.spec.status], ['invalid_request', 'svc.answer_kind', 400]);
        assert.match(err.message, /svc\.answer_kind.*choice, yes_no, number, short_text/);
      }
    });

    it(`Form ${form}: on /v1/responses too, in svc as on chat completions`, () => {
      const input = 'Hi';
      const parsed = parseResponseRequest(form, requests, { model: base.model, input, svc: { answer_kind: 'yes_no' } });
      assert.deepEqual(parsed.completion.options, { answer: { answerKind: { kind: 'yes_no' } } });
      const err = refusal(() => parseResponseRequest(form, requests, { model: base.model, input, svc: { answer_kind: 'maybe' } }));
      assert.deepEqual([err.code, err.param], ['invalid_request', 'svc.answer_kind']);
    });
  }

  it('two calls differing only in answer_kind are two calls: their derived keys differ (the fingerprint hashes the same options)', () => {
    const key = (svc?: Record<string, unknown>): string =>
      derivedIdempotencyKey('org_1', 'key_1', parseRequest(formBRequests.completion, { ...BASE, ...(svc && { svc }) }));
    const keys = [key(), key({ answer_kind: 'number' }), key({ answer_kind: 'short_text' })];
    assert.equal(new Set(keys).size, 3);
    // Without the kind (absent, null, or in an empty svc as before), the key is the one it always was.
    assert.equal(key({ answer_kind: null }), key({}));
  });
});
