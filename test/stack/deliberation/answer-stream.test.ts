import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { openAnswerWriter, type AnswerStream, type AnswerWriter } from '../../../activities/answer-stream';
import { createEngineCall, type EngineCallInput, type EngineCallResult } from '../../../activities/engine-call';
import { JUDGE_TAG, SYNTHESIS_TAG } from '../../../domain/prompts';
import { createLogger } from '../../../infra/log';
import { audit } from '../../../operations/audit';
import { stack } from '../../harness/stack';
import { OPENAI_TEST_KEY, openAiError, openAiReply, textPieces, type RecordedRequest, type Reply } from '../../fixtures/providers';
import { entrySettingsOf } from '../../harness/settings';
import { customMode, deliberate, newOrg, withOpenAiLoopback } from './helpers';

/**
 * Issue 53 item 4, durable: the express seat writing a watched call's answer streams it into `answer_chunks`; an
 * attempt retried after it had begun (the provider's stream broken midway; an answer cut by its limit and given more
 * room) continues the text stored, sent to the provider as the assistant's turn begun, so the pieces stored join to
 * the receipt's answer. Against a loopback speaking OpenAI's streamed chat completions.
 */
const FULL = 'First view: the sky is blue because of Rayleigh scattering.';
/** What the first attempt got out before its stream broke: the role chunk, then five pieces. */
const SENT = textPieces(FULL).slice(0, 5).join('');
const CUT = 'The answer begins but';
/** What the retry given more room streamed on from the cut before its stream broke: the role chunk, then three pieces. */
const MORE = textPieces(' and goes on for a while longer.').slice(0, 3).join('');
const SEAT = 'Seat view: Rayleigh scattering.';
const SEAT_MAX = 64;

type Body = { messages: { role: string; content: string }[]; stream?: boolean; max_tokens?: number };
const bodyOf = (r: RecordedRequest): Body => r.body as Body;
const continued = (r: RecordedRequest): string | undefined => {
  const last = bodyOf(r).messages.at(-1);
  return last?.role === 'assistant' ? last.content : undefined;
};

/** A judge that finds the seats apart, so the synthesis writes the answer. */
function verdict(req: RecordedRequest): Reply {
  const labels = [...new Set([...req.bodyText.matchAll(/Answer ([A-C]):/g)].map((m) => m[1]))];
  const scores = Object.fromEntries(labels.map((l) => [l, 7]));
  return openAiReply({ text: JSON.stringify({ scores, best: labels[0], why: 'They differ.', divergence: 0.6, converged: false }) });
}

function script(req: RecordedRequest): Reply {
  const from = continued(req);
  if (req.bodyText.includes('[[synthesis-breaks]]')) {
    if (req.bodyText.includes(JUDGE_TAG)) return verdict(req);
    if (!req.bodyText.includes(SYNTHESIS_TAG)) return openAiReply({ text: SEAT });
    // The first synthesis streams five pieces and breaks; every engine asked to go on from them refuses for good.
    return from === undefined ? { ...openAiReply({ text: FULL }), breakAfter: 6 } : openAiError(400, 'This request cannot be continued.');
  }
  if (req.bodyText.includes('[[cut-then-break]]')) {
    if (from === undefined) return openAiReply({ text: CUT, finish: 'length', completionTokens: SEAT_MAX });
    return from === CUT
      ? { ...openAiReply({ text: ' and goes on for a while longer.' }), breakAfter: 4 }
      : openAiError(400, 'This request cannot be continued.');
  }
  if (req.bodyText.includes('[[break-once]]'))
    return from === undefined
      ? { ...openAiReply({ text: FULL, completionTokens: 14 }), breakAfter: 6 }
      : openAiReply({ text: FULL.slice(from.length), completionTokens: 9 });
  if (req.bodyText.includes('[[cut-once]]'))
    return from === undefined
      ? openAiReply({ text: CUT, finish: 'length', completionTokens: SEAT_MAX })
      : openAiReply({ text: ' and ends here.', completionTokens: 4 });
  return openAiReply({ text: FULL });
}

const expressMode = (orgId: string): ReturnType<typeof customMode> =>
  customMode(orgId, 'quorum-express', {
    tiers: { experience: { seats: ['openai/gpt-4.1-mini'] } },
    seatMaxOutputTokens: SEAT_MAX,
  });

describe('the answer as it is written: a retried writer continues what it stored (issue 53 item 4)', function () {
  this.timeout(120_000);
  const openai = withOpenAiLoopback(script);
  afterEach(() => {
    assert.deepEqual(
      openai().rejected.map((r) => r.reason),
      [],
    );
  });

  /** The answer's pieces as stored (not the calls' results after them). */
  async function pieces(requestId: string): Promise<string[]> {
    return (
      (await stack()
        .db('answer_chunks')
        .where({ request_id: requestId })
        .whereNull('call_result')
        .orderBy(['step', 'part'])
        .select('text')) as { text: string }[]
    ).map((r) => r.text);
  }

  it('a stream broken midway is retried from what it stored: the pieces join to the answer, the provider asked to go on from them', async () => {
    const org = await newOrg();
    const { outcome: o } = await deliberate(
      { org, mode: await expressMode(org.orgId), tier: 'experience', content: 'Why is the sky blue? [[break-once]]' },
      'answer-stream-continued',
    );
    assert.equal(o.answer, FULL);
    const tries = openai().requests.filter((r) => r.bodyText.includes('[[break-once]]'));
    assert.equal(tries.length, 2);
    assert.ok(tries.every((r) => bodyOf(r).stream === true));
    assert.equal(continued(tries[0]), undefined);
    assert.equal(continued(tries[1]), SENT, 'the retry sends what the first attempt streamed as the turn begun');
    const stored = await pieces(o.requestId);
    assert.equal(stored.join(''), FULL);
    // The first attempt's pieces come first, whole: a row boundary where the retry took over.
    assert.ok(
      stored.some((_, i) => stored.slice(0, i + 1).join('') === SENT),
      JSON.stringify(stored),
    );
    // Billed for the call that answered (the broken one never reported its usage): the provider's own count.
    const seat = o.seatPasses.find((p) => p.role === 'seat1');
    assert.equal(seat?.tokensOut, 9);
    assert.deepEqual(await audit(stack().db, stack().env.client, { orgIds: [org.orgId] }), []);
  });

  it('an answer cut by its limit is given more room to go on from where it was cut, both attempts billed', async () => {
    const org = await newOrg();
    const { outcome: o } = await deliberate({
      org,
      mode: await expressMode(org.orgId),
      tier: 'experience',
      content: 'Why is the sky blue? [[cut-once]]',
    });
    assert.equal(o.answer, `${CUT} and ends here.`);
    assert.equal(o.finishReason, 'stop');
    const tries = openai().requests.filter((r) => r.bodyText.includes('[[cut-once]]'));
    assert.deepEqual(
      tries.map((r) => [bodyOf(r).max_tokens, continued(r)]),
      [
        [SEAT_MAX, undefined],
        [SEAT_MAX * 2, CUT],
      ],
    );
    assert.equal((await pieces(o.requestId)).join(''), o.answer);
    const seat = o.seatPasses.find((p) => p.role === 'seat1');
    assert.equal(seat?.tokensOut, SEAT_MAX + 4);
    assert.deepEqual(await audit(stack().db, stack().env.client, { orgIds: [org.orgId] }), []);
  });

  it('a synthesis that fails for good after its answer began streaming: what it streamed stands, cut, not the best seat’s answer', async () => {
    const org = await newOrg();
    const mode = await customMode(org.orgId, 'quorum-panel', {
      tiers: { experience: { seats: ['openai/gpt-4.1-mini'] }, plus: { seats: ['openai/gpt-4.1-mini', 'openai/gpt-4.1'] } },
      staff: { judge: { engine: 'openai/gpt-4.1' }, synthesis: { engine: 'openai/gpt-4.1', backup: 'openai/gpt-4.1-mini' } },
      rounds: 1,
      critique: 'never',
      express: 'never',
    });
    const { outcome: o } = await deliberate(
      { org, mode, tier: 'plus', content: 'Why is the sky blue? [[synthesis-breaks]]' },
      'answer-stream-synthesis-fails',
    );
    const syntheses = openai().requests.filter((r) => r.bodyText.includes('[[synthesis-breaks]]') && r.bodyText.includes(SYNTHESIS_TAG));
    // The broken stream, its retry from what it stored (refused for good), and the backup asked to go on from it too.
    assert.deepEqual(
      syntheses.map((r) => [(r.body as { model: string }).model, continued(r)]),
      [
        ['gpt-4.1', undefined],
        ['gpt-4.1', SENT],
        ['gpt-4.1-mini', SENT],
      ],
    );
    assert.equal(o.answer, SENT, 'what was streamed, not the best seat’s answer');
    assert.notEqual(o.answer, SEAT);
    assert.equal(o.finishReason, 'length');
    assert.equal((await pieces(o.requestId)).join(''), o.answer);
    // The synthesis that failed is named and not billed (the service's cost): the seats and the judge are.
    assert.equal(o.staff.synthesis, null);
    assert.ok(
      o.staffUnavailable.some((u) => u.role === 'synthesis'),
      JSON.stringify(o.staffUnavailable),
    );
    assert.deepEqual(await audit(stack().db, stack().env.client, { orgIds: [org.orgId] }), []);
  });

  it('a retry given more room that fails for good after streaming on: the cut answer and what it streamed stand, cut', async () => {
    const org = await newOrg();
    const { outcome: o } = await deliberate({
      org,
      mode: await expressMode(org.orgId),
      tier: 'experience',
      content: 'Why is the sky blue? [[cut-then-break]]',
    });
    const tries = openai().requests.filter((r) => r.bodyText.includes('[[cut-then-break]]'));
    assert.deepEqual(
      tries.map((r) => [bodyOf(r).max_tokens, continued(r)]),
      [
        [SEAT_MAX, undefined],
        [SEAT_MAX * 2, CUT],
        [SEAT_MAX * 2, CUT + MORE],
      ],
    );
    assert.equal(o.answer, CUT + MORE);
    assert.equal(o.finishReason, 'length');
    assert.equal((await pieces(o.requestId)).join(''), o.answer);
    assert.deepEqual(await audit(stack().db, stack().env.client, { orgIds: [org.orgId] }), []);
  });

  it('a writer whose place another writer of the call took stops there and says so; its pieces are not stored', async () => {
    const { requestId, at, log, atStep, org } = await besideACall();
    // Both open before either has stored anything: each believes the answer begins with it.
    const [first, late] = [await writerOf(at, log, org, 'call-a'), await writerOf(at, log, org, 'call-a')];
    first.onText('The first writer ');
    assert.deepEqual(await first.end(RESULT), { taken: false });
    late.onText('A different text');
    assert.deepEqual(await late.end(RESULT), { taken: true });
    assert.equal(await atStep(), 'The first writer ');
    const other = await writerOf(at, log, org, 'call-b');
    assert.equal(other.prefix, 'The first writer ', 'another call at the place (more room) goes on from what is stored');
    assert.equal(other.ended, undefined);
    other.onText('goes on.');
    assert.deepEqual(await other.end({ ...RESULT, finish: 'stop' }), { taken: false });
    assert.equal(await atStep(), 'The first writer goes on.');
    await cleanUp(requestId, org.orgId);
  });

  it('an execution of a call that already returned gets its result and its text, and stores nothing more', async () => {
    const { requestId, at, log, atStep, org } = await besideACall();
    const first = await writerOf(at, log, org, 'call-a');
    first.onText('Written once.');
    assert.deepEqual(await first.end(RESULT), { taken: false });
    // The workflow task ran again before the result was recorded: the same call, executed again.
    const again = await writerOf(at, log, org, 'call-a');
    assert.deepEqual(again.ended, { ...RESULT, text: 'Written once.' });
    // A cut answer's retry with more room went on from it; the first call, executed again after that, still gets its own.
    const more = await writerOf(at, log, org, 'call-b');
    more.onText(' And more.');
    assert.deepEqual(await more.end({ ...RESULT, finish: 'stop' }), { taken: false });
    assert.deepEqual((await writerOf(at, log, org, 'call-a')).ended, { ...RESULT, text: 'Written once.' });
    assert.deepEqual((await writerOf(at, log, org, 'call-b')).ended, { ...RESULT, finish: 'stop', text: 'Written once. And more.' });
    // A writer opened before the first call returned, still writing after: its place is taken by the result.
    const stale = await openAnswerWriter(stack().db, log, org.orgId, { requestId, step: 98 }, 'call-c');
    const fresh = await openAnswerWriter(stack().db, log, org.orgId, { requestId, step: 98 }, 'call-c');
    assert.deepEqual(await fresh.end(RESULT), { taken: false });
    stale.onText('Late text.');
    assert.deepEqual(await stale.end(RESULT), { taken: true });
    assert.equal(await atStep(), 'Written once. And more.');
    await cleanUp(requestId, org.orgId);
  });

  it('an engine call executed again after it returned, its result not recorded, returns that result and asks no engine', async () => {
    const { requestId, at, log, atStep, org } = await besideACall();
    const engineCall = createEngineCall({
      db: stack().db,
      log,
      ...entrySettingsOf({ QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai().baseUrl }, log),
    });
    const input: EngineCallInput = {
      orgId: org.orgId,
      engineId: 'openai/gpt-4.1-mini',
      ownKey: false,
      messages: [{ role: 'user', content: 'Why is the sky blue? [[executed-again]]' }],
      maxOutputTokens: SEAT_MAX,
      stream: at,
    };
    const asked = (): number => openai().requests.filter((r) => r.bodyText.includes('[[executed-again]]')).length;
    // Each execution in an activity context of its own, as a workflow task run again gives it.
    const execute = (): Promise<EngineCallResult> =>
      new MockActivityEnvironment().run<[EngineCallInput], EngineCallResult, typeof engineCall>(engineCall, input);
    const first = await execute();
    assert.equal(first.text, FULL);
    assert.deepEqual(await execute(), first);
    assert.equal(asked(), 1, 'the engine was asked once');
    assert.equal(await atStep(), FULL);
    await cleanUp(requestId, org.orgId);
  });
});

const RESULT = { engineId: 'openai/gpt-4.1', finish: 'length', tokensOut: 3 };

/** A call's request to write beside, at a step its own answer never took. */
async function besideACall(): Promise<{
  org: Awaited<ReturnType<typeof newOrg>>;
  requestId: string;
  at: { requestId: string; step: number };
  log: ReturnType<typeof createLogger>;
  atStep: () => Promise<string>;
}> {
  const org = await newOrg();
  const { outcome } = await deliberate({ org, mode: await expressMode(org.orgId), tier: 'experience', content: 'Why is the sky blue?' });
  const { requestId } = outcome;
  const atStep = async (): Promise<string> =>
    ((await stack().db('answer_chunks').where({ request_id: requestId, step: 99 }).orderBy('part').select('text')) as { text: string }[])
      .map((r) => r.text)
      .join('');
  return { org, requestId, at: { requestId, step: 99 }, log: createLogger('answer-stream-test', () => undefined), atStep };
}

function writerOf(
  at: AnswerStream,
  log: ReturnType<typeof createLogger>,
  org: { orgId: string },
  call: string,
): Promise<AnswerWriter<typeof RESULT>> {
  return openAnswerWriter<typeof RESULT>(stack().db, log, org.orgId, at, call);
}

/** Written beside the call's answer, these pieces do not begin it: removed, the call is as it ended. */
async function cleanUp(requestId: string, orgId: string): Promise<void> {
  await stack().db('answer_chunks').where({ request_id: requestId }).where('step', '>=', 98).delete();
  assert.deepEqual(await audit(stack().db, stack().env.client, { orgIds: [orgId] }), []);
}
