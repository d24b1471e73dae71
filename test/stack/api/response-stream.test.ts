import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type { Responses } from 'openai/resources/responses/responses';
import type { Form } from '../../../domain/form';
import { stack } from '../../harness/stack';
import { startProductWorkers, withReceiptsRefused } from '../deliberation/helpers';
import { EXPRESS, newOrg, PANEL, startApi, USER, type Api } from './helpers';

/**
 * Issue 40 item 2: a response's server-sent events through the official `openai` Node client. A stream is cut after
 * its first seat answered, the API that served it is restarted, and the stream is resumed on the new one with
 * `starting_after`: together the two carry every sequence number once, in order, and the answer they carry is the one
 * a plain retrieve returns.
 */
type Step = { step: string; round?: number; seats_answered?: number };
type Event = { type: string; sequence_number: number; quorum?: Step } & Record<string, unknown>;
/** A step's event is a `response.in_progress` with its step in `quorum` (docs/api-extensions.md). */
const stepOf = (e: Event): string | undefined => (e.type === 'response.in_progress' ? e.quorum?.step : undefined);

/** The answer's deltas joined: what a client that prints them as they come has shown. */
const deltasOf = (events: readonly Event[]): string =>
  events.flatMap((e) => (e.type === 'response.output_text.delta' ? [String(e.delta)] : [])).join('');

/** The stream resumed after the last event of `first`: the events of both, each sequence number once and in order. */
async function resumedAfter(openai: OpenAI, id: string, first: readonly Event[]): Promise<Event[]> {
  const all = [...first];
  const resumed = await openai.responses.retrieve(id, { stream: true, starting_after: first[first.length - 1].sequence_number });
  for await (const e of resumed) all.push(e as unknown as Event);
  assert.deepEqual(
    all.map((e) => e.sequence_number),
    all.map((_, i) => i),
    `no gap and no repeat: ${all.map((e) => `${e.sequence_number}:${e.type}`).join(' ')}`,
  );
  return all;
}

function client(api: Api, key: string): OpenAI {
  return new OpenAI({ baseURL: `${api.url}/v1`, apiKey: key, maxRetries: 0, timeout: 120_000 });
}

describe('response streams: cut, resumed with starting_after on a restarted API (sim engines)', function () {
  this.timeout(180_000);
  let workers: { stop(): Promise<void> };
  let api: Api;

  before(async () => {
    // Engine steps of 3 s: the stream is cut while the deliberation runs, and a cancel (which reaches the engine calls
    // at the workflow task's next heartbeat, within about 4 s) lands before the panel's judge and synthesis are done.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:3000' });
    api = await startApi('B');
  });
  after(async () => {
    await api.close();
    await workers.stop();
  });

  it('the cut stream and its resumption carry every event once, in order, ending with the answer a retrieve gives', async () => {
    const org = await newOrg();
    const input = `Compare two approaches to caching and explain the trade-offs, step by step. Why? How? ${randomUUID()}`;
    const first: Event[] = [];
    // A background response: as on OpenAI, only it outlives the connection that streams it (any other is cancelled).
    const stream = await client(api, org.ownerKey).responses.create({ model: PANEL.B, input, stream: true, background: true });
    for await (const e of stream) {
      first.push(e as unknown as Event);
      // Cut once a seat has answered: the deliberation is mid-way.
      if (stepOf(e as unknown as Event) === 'seat_answered') break;
    }
    const created = first[0] as Event & { response: { id: string; status: string } };
    assert.equal(created.type, 'response.created');
    assert.equal(first[1].type, 'response.in_progress');
    const id = created.response.id;

    // Another API process answers the resumption: nothing of the first stream lives in memory.
    await api.close();
    api = await startApi('B');
    const openai = client(api, org.ownerKey);
    const all = await resumedAfter(openai, id, first);
    const types = all.map((e) => e.type);
    assert.equal(types[types.length - 1], 'response.completed');
    const steps = all.map(stepOf);
    assert.equal(steps[2], 'classified');
    assert.ok(steps.includes('judged'));
    assert.equal(all[1].quorum, undefined, 'the first in_progress is OpenAI’s, before any step');
    // The answer's message: one delta per piece a synthesis wrote as it went (issue 53 item 4), or one with the whole
    // answer when no call wrote it for the caller (seats that agreed, the synthesis skipped).
    const answerTypes = types.slice(types.indexOf('response.output_item.added'));
    const deltas = answerTypes.filter((t) => t === 'response.output_text.delta').length;
    assert.ok(deltas >= 1);
    assert.deepEqual(answerTypes, [
      'response.output_item.added',
      'response.content_part.added',
      ...Array<string>(deltas).fill('response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);

    const polled = (await openai.responses.retrieve(id)) as OpenAI.Responses.Response & { svc: { seats_answered: number } };
    assert.equal(polled.status, 'completed');
    const done = all.find((e) => e.type === 'response.output_text.done') as Event & { text: string };
    assert.equal(deltasOf(all), polled.output_text);
    assert.equal(done.text, polled.output_text);
    const completed = all[all.length - 1] as Event & { response: { output: unknown; usage: unknown } };
    assert.deepEqual(completed.response.output, polled.output);
    assert.deepEqual(completed.response.usage, polled.usage);
    // One event per seat that answered the first round, as the receipt counts them.
    const round1 = all.flatMap((e) => (stepOf(e) === 'seat_answered' && e.quorum?.round === 1 ? [e.quorum] : []));
    assert.equal(round1.length, polled.svc.seats_answered);
    assert.deepEqual(
      round1.map((e) => e.seats_answered),
      round1.map((_, i) => i + 1),
    );

    // The SDK's own stream helper reads the whole stream again, from the start, to the same response.
    const helper = await openai.responses.stream({ response_id: id }).finalResponse();
    assert.equal(helper.output_text, polled.output_text);
    assert.equal(helper.status, 'completed');
  });

  it('a response cancelled mid-stream ends its stream with response.incomplete, its status cancelled, and no answer events', async () => {
    const org = await newOrg();
    const openai = client(api, org.ownerKey);
    const stream = await openai.responses.create({
      model: PANEL.B,
      input: `Compare caching strategies. Why? How? ${randomUUID()}`,
      stream: true,
    });
    const seen: Event[] = [];
    for await (const e of stream) {
      const event = e as unknown as Event;
      seen.push(event);
      if (stepOf(event) === 'classified') {
        const id = (seen[0] as Event & { response: { id: string } }).response.id;
        await openai.responses.cancel(id);
      }
    }
    assert.deepEqual(
      seen.map((e) => e.sequence_number),
      seen.map((_, i) => i),
    );
    const last = seen[seen.length - 1] as Event & { response: { status: string; output: unknown[] } };
    assert.equal(last.type, 'response.incomplete');
    assert.equal(last.response.status, 'cancelled');
    assert.deepEqual(last.response.output, []);
    assert.ok(!seen.some((e) => e.type.startsWith('response.output_')));
  });

  it('a call that fails mid-run ends its stream with OpenAI’s `error` event, then response.failed naming the code (issue 53)', async () => {
    const org = await newOrg();
    const openai = client(api, org.ownerKey);
    const events: Event[] = [];
    // The engines answer and the judge reads them; then the receipt cannot be written (502 cost_unreadable).
    await withReceiptsRefused(org.orgId, async () => {
      const stream = await openai.responses.create({ model: PANEL.B, input: `What is 2+2? ${randomUUID()}`, stream: true });
      for await (const e of stream) events.push(e as unknown as Event);
    });
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
    const [error, failed] = events.slice(-2) as [
      Event & { code: string; message: string },
      Event & { response: { status: string; error: { code: string } } },
    ];
    assert.deepEqual([error.type, error.code], ['error', 'cost_unreadable']);
    assert.match(error.message, /cost_unreadable/);
    assert.deepEqual([failed.type, failed.response.status, failed.response.error.code], ['response.failed', 'failed', 'cost_unreadable']);
    // A synthesis that wrote for the caller before the receipt failed has streamed its pieces: the answer never
    // completed, so its message is not closed (no done events), and the pieces came before the error.
    const done = ['response.output_text.done', 'response.content_part.done', 'response.output_item.done'];
    assert.ok(!events.some((e) => done.includes(e.type)), 'no answer completed');
    assert.ok(
      events.every((e, i) => e.type !== 'response.output_text.delta' || i < events.length - 2),
      'any piece sent came before the error',
    );
    assert.ok(
      events.some((e) => stepOf(e) === 'seat_answered'),
      'it failed mid-run, after its seats answered',
    );
  });

  it('zero retention: a streamed response delivers its answer to its caller, then reads blank; a background one is refused (issue 53)', async () => {
    const org = await newOrg();
    await stack().db('organisations').where({ id: org.orgId }).update({ transcript_retention_days: 0 });
    const openai = client(api, org.ownerKey);
    const stream = await openai.responses.stream({ model: EXPRESS.B, input: `Name one prime number. ${randomUUID()}` });
    const delivered = await stream.finalResponse();
    assert.equal(delivered.status, 'completed');
    assert.ok(delivered.output_text.length > 0, 'the answer reached its caller');
    // The caller has it; nothing else does: the receipt and a poll read blank.
    const polled = await openai.responses.retrieve(delivered.id);
    assert.equal(polled.output_text, '');
    const receipt = await stack()
      .db('receipts')
      .where({ request_id: (polled as unknown as { svc: { request_id: string } }).svc.request_id })
      .first('outcome');
    assert.equal((receipt as { outcome: { answer: string; transcriptDeleted: { reason: string } } }).outcome.answer, '');
    const pieces = await stack()
      .db('answer_chunks')
      .where({ request_id: (polled as unknown as { svc: { request_id: string } }).svc.request_id })
      .count({ n: '*' })
      .first();
    assert.equal(Number(pieces?.n), 0, 'no piece of the answer was kept while it was written');
    const refused = await openai.responses.create({ model: EXPRESS.B, input: 'Name one prime number.', background: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(refused instanceof OpenAI.APIError && refused.status === 400, String(refused));
    assert.equal(refused.param, 'background');
    assert.equal(
      await stack()
        .db('requests')
        .where({ org_id: org.orgId })
        .count({ n: '*' })
        .first()
        .then((r) => Number(r?.n)),
      1,
      'the refused one started nothing',
    );
  });

  it('a chat completion, which no one can watch, stores no step events; the same question as a response stores its steps (issue 42)', async () => {
    const org = await newOrg();
    const openai = client(api, org.ownerKey);
    const question = `Name one prime number. ${randomUUID()}`;
    await openai.chat.completions.create({ model: EXPRESS.B, messages: USER(question) });
    const response = await openai.responses.create({ model: EXPRESS.B, input: question });
    assert.equal(response.status, 'completed');
    const rows = (await stack()
      .db('requests as r')
      .leftJoin('deliberation_events as e', 'e.request_id', 'r.id')
      .where('r.org_id', org.orgId)
      .groupBy('r.id', 'r.created_at')
      .orderBy('r.created_at')
      .select('r.id')
      .count({ events: 'e.step' })) as { id: string; events: string }[];
    assert.equal(rows.length, 2, 'one request per call');
    const [completion, asResponse] = rows.map((r) => Number(r.events));
    assert.equal(completion, 0, 'the chat completion stored no step event');
    // classified, the seat's answer, ended (the events the express lane takes; domain/deliberation-events.ts).
    assert.ok(asResponse >= 3, `the response stored its steps: ${asResponse}`);
  });

  it('a stream of another organisation’s response is 404 before any event; starting_after without stream is 400', async () => {
    const org = await newOrg();
    const other = await newOrg();
    const openai = client(api, org.ownerKey);
    const r = await openai.responses.create({ model: PANEL.B, input: `What is 2+2? ${randomUUID()}`, background: true });
    const notFound = await client(api, other.ownerKey)
      .responses.retrieve(r.id, { stream: true })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(notFound instanceof OpenAI.APIError && notFound.status === 404, String(notFound));
    const res = await fetch(`${api.url}/v1/responses/${r.id}?starting_after=3`, { headers: { authorization: `Bearer ${org.ownerKey}` } });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { param: string } }).error.param, 'starting_after');
  });
});

describe('the answer streams as its engine writes it (issue 53 item 4, sim engines)', function () {
  this.timeout(180_000);
  let workers: { stop(): Promise<void> };
  const apis: Partial<Record<Form, Api>> = {};

  before(async () => {
    // Each engine call takes 3 s and writes its text in pieces across them, as a provider streams tokens.
    workers = await startProductWorkers({ QUORUM_SIM_LATENCY: 'fixed:3000' });
    apis.A = await startApi('A');
    apis.B = await startApi('B');
  });
  after(async () => {
    await Promise.all(Object.values(apis).map((a) => a.close()));
    await workers.stop();
  });

  /** The request's stored pieces (not the call's result after them): how many, and how far apart the first and the last were written. */
  async function storedPieces(requestId: string): Promise<{ n: number; spreadMs: number; text: string }> {
    const rows = (await stack()
      .db('answer_chunks')
      .where({ request_id: requestId })
      .whereNull('call_result')
      .orderBy(['step', 'part'])
      .select('text', 'recorded_at')) as { text: string; recorded_at: Date }[];
    const times = rows.map((r) => r.recorded_at.getTime());
    return { n: rows.length, spreadMs: Math.max(...times) - Math.min(...times), text: rows.map((r) => r.text).join('') };
  }

  for (const form of ['A', 'B'] as const)
    it(`Form ${form}: the express lane's seat streams its answer in pieces before its step ends; a stream cut mid-answer and resumed carries each piece once; the pieces are the receipt's answer`, async () => {
      const api = apis[form] as Api;
      const org = await newOrg();
      const openai = client(api, org.ownerKey);
      const input = `Explain why the sky is blue in a few sentences. ${randomUUID()}`;
      const first: Event[] = [];
      const stream = await openai.responses.create({ model: EXPRESS[form], input, stream: true, background: true });
      for await (const e of stream) {
        first.push(e as unknown as Event);
        // Cut after the second piece: the seat is still writing.
        if (first.filter((x) => x.type === 'response.output_text.delta').length === 2) break;
      }
      const id = (first[0] as Event & { response: { id: string } }).response.id;
      const all = await resumedAfter(openai, id, first);
      const order = all.map((e) => stepOf(e) ?? e.type);
      const firstDelta = order.indexOf('response.output_text.delta');
      assert.ok(firstDelta > order.indexOf('classified'), 'the answer follows the classification');
      assert.ok(firstDelta < order.indexOf('seat_answered'), `the answer streams before the seat's step ends: ${order.join(' ')}`);
      assert.ok(order.filter((t) => t === 'response.output_text.delta').length >= 3, 'in pieces');

      const polled = (await openai.responses.retrieve(id)) as OpenAI.Responses.Response & { svc: { request_id: string } };
      assert.equal(polled.status, 'completed');
      assert.equal(deltasOf(all), polled.output_text);
      const receipt = (await stack().db('receipts').where({ request_id: polled.svc.request_id }).first('outcome')) as {
        outcome: { answer: string };
      };
      assert.equal(deltasOf(all), receipt.outcome.answer);
      // Written as the engine went: the pieces were stored over its 3 s, not at once at its end.
      const pieces = await storedPieces(polled.svc.request_id);
      assert.equal(pieces.text, receipt.outcome.answer);
      assert.ok(pieces.n >= 3 && pieces.spreadMs >= 1_000, `${pieces.n} pieces over ${pieces.spreadMs} ms`);
      // The SDK's own helper, reading the whole stream again from the start, ends on the same answer.
      assert.equal((await openai.responses.stream({ response_id: id }).finalResponse()).output_text, polled.output_text);
    });

  it('a panel whose synthesis writes the answer streams it after the synthesising step, before the response completes', async () => {
    const org = await newOrg();
    const openai = client(apis.B as Api, org.ownerKey);
    const events: Event[] = [];
    // The debate mode never skips its synthesis.
    const stream = await openai.responses.create({
      model: 'QRM:DBTE',
      input: `Compare two approaches to caching. Why? How? ${randomUUID()}`,
      stream: true,
    });
    for await (const e of stream) events.push(e as unknown as Event);
    const order = events.map((e) => stepOf(e) ?? e.type);
    const synthesising = order.indexOf('synthesising');
    assert.ok(synthesising > 0, order.join(' '));
    const deltas = order.flatMap((t, i) => (t === 'response.output_text.delta' ? [i] : []));
    assert.ok(deltas.length >= 3 && deltas[0] > synthesising, order.join(' '));
    const completed = events[events.length - 1] as Event & { response: Responses.Response & { svc: { request_id: string } } };
    assert.equal(completed.type, 'response.completed');
    const answer = (completed.response.output[0] as Responses.ResponseOutputMessage).content[0] as Responses.ResponseOutputText;
    assert.equal(deltasOf(events), answer.text);
    const pieces = await storedPieces(completed.response.svc.request_id);
    assert.equal(pieces.text, answer.text);
    assert.ok(pieces.spreadMs >= 1_000, `${pieces.n} pieces over ${pieces.spreadMs} ms`);
  });
});
