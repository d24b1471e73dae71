import assert from 'node:assert/strict';
import { audit } from '../../../operations/audit';
import { stack } from '../../harness/stack';
import { openAiReply, textPieces, type RecordedRequest, type Reply } from '../../fixtures/providers';
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
const SEAT_MAX = 64;

type Body = { messages: { role: string; content: string }[]; stream?: boolean; max_tokens?: number };
const bodyOf = (r: RecordedRequest): Body => r.body as Body;
const continued = (r: RecordedRequest): string | undefined => {
  const last = bodyOf(r).messages.at(-1);
  return last?.role === 'assistant' ? last.content : undefined;
};

function script(req: RecordedRequest): Reply {
  const from = continued(req);
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

describe('the answer as it is written: a retried writer continues what it stored (issue 53 item 4)', function () {
  this.timeout(120_000);
  const openai = withOpenAiLoopback(script);
  afterEach(() => {
    assert.deepEqual(
      openai().rejected.map((r) => r.reason),
      [],
    );
  });

  const expressMode = (orgId: string): ReturnType<typeof customMode> =>
    customMode(orgId, 'quorum-express', {
      tiers: { experience: { seats: ['openai/gpt-4.1-mini'] } },
      seatMaxOutputTokens: SEAT_MAX,
    });

  async function pieces(requestId: string): Promise<string[]> {
    return (
      (await stack().db('answer_chunks').where({ request_id: requestId }).orderBy(['step', 'part']).select('text')) as { text: string }[]
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
});
