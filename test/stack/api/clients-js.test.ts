import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { Agent, OpenAIProvider, Runner, setTracingDisabled, type AgentInputItem } from '@openai/agents';
import { generateObject, generateText, Output, streamText } from 'ai';
import { z } from 'zod';
import { countMessagesTokens } from '../../../domain/tokens';
import type { ChatMessage } from '../../../domain/messages';
import { exchangeWith, expressReceipt, posts, proxiedApis, turnsOf, viaClient, type Exchange, type RecordingProxy } from './client-proxy';
import { EXPRESS, FORMS, newKey, newOrg, type Api } from './helpers';

/**
 * Issue 53 item 1, the JavaScript clients: each is given the API's base URL, a key and a mode key as its model, and
 * nothing else, and used as its own documentation shows: the OpenAI Agents SDK (its default model speaks
 * `/v1/responses`), LangChain.js (`@langchain/openai`) and the Vercel AI SDK (`ai` + `@ai-sdk/openai`), at the releases
 * pinned in package.json. The one setting changed is the Agents SDK's tracing exporter, which would post every run's
 * trace to api.openai.com: it is not the API under test (`setTracingDisabled(true)`).
 *
 * Each client reaches the API through a recording pass-through (client-proxy.ts), so each test reads what the client
 * really sent, and a failure shows the server's status and body. The mode is the express lane (one seat, whose answer is
 * the answer), so every answer is checked against the seat's answer on the call's receipt.
 */
const AGENTS_VERSION = '0.20.0';
const LANGCHAIN_VERSION = '1.6.0';
const AI_VERSION = '7.0.173';
const AI_OPENAI_VERSION = '4.0.118';

/** A structure every client is asked for, checked field by field against what the receipt's seat wrote. */
const Capital = z.object({
  city: z.string().max(80),
  population: z.number().int().min(0),
  coastal: z.boolean(),
});
type Capital = z.infer<typeof Capital>;

function assertCapital(got: unknown, recorded: string): void {
  const value = got as Capital;
  assert.deepEqual(Object.keys(value).sort(), ['city', 'coastal', 'population']);
  assert.ok(typeof value.city === 'string' && value.city.length <= 80, JSON.stringify(value));
  assert.ok(Number.isInteger(value.population) && value.population >= 0, JSON.stringify(value));
  assert.equal(typeof value.coastal, 'boolean');
  assert.deepEqual(Capital.parse(value), value);
  // What the client parsed is what the seat wrote, field by field.
  const written = JSON.parse(recorded) as Capital;
  assert.equal(value.city, written.city);
  assert.equal(value.population, written.population);
  assert.equal(value.coastal, written.coastal);
}

const text = (role: ChatMessage['role'], content: string): ChatMessage => ({ role, content });

/** The one POST of `path` since `from`: each client call here is one request. */
function onePost(proxy: RecordingProxy, path: string, from: number): Exchange {
  const found = posts(proxy, path, from);
  assert.equal(found.length, 1, `one POST ${path}: ${found.map((e) => e.path).join(', ')}`);
  return found[0];
}

const bodyOf = (e: Exchange): Record<string, unknown> => e.request as Record<string, unknown>;

describe('the JavaScript clients by base URL alone (issue 53 item 1, sim engines)', function () {
  this.timeout(5 * 60_000);
  const stack = proxiedApis();
  before(() => {
    // The Agents SDK's trace exporter posts to api.openai.com; the runs under test go to the base URL alone.
    setTracingDisabled(true);
  });

  for (const form of FORMS) {
    const model = EXPRESS[form];
    const api = (): Api => stack.api(form);
    const proxy = (): RecordingProxy => stack.proxy(form);
    const baseURL = (): string => `${proxy().url}/v1`;
    const freshKey = async (): Promise<string> => newKey((await newOrg(5)).orgId, { limits: { requestsPerMinute: 1_000 } });

    describe(`@openai/agents ${AGENTS_VERSION}, Form ${form}`, () => {
      const instructions = 'You are a concise assistant. Answer in one short paragraph.';
      const setup = (key: string): { runner: Runner; agent: Agent } => ({
        runner: new Runner({ modelProvider: new OpenAIProvider({ baseURL: baseURL(), apiKey: key }) }),
        agent: new Agent({ name: 'Assistant', instructions, model }),
      });

      it('an agent answers over /v1/responses, its default model; the answer is what the receipt records', async () => {
        const key = await freshKey();
        const { runner, agent } = setup(key);
        const question = `Why is the sky blue? ${randomUUID()}`;
        const from = proxy().exchanges.length;
        const result = await viaClient(proxy(), 'run()', () => runner.run(agent, question));
        const sent = onePost(proxy(), '/responses', from);
        assert.equal(bodyOf(sent).model, model);
        assert.equal(bodyOf(sent).instructions, instructions);
        const answer = result.finalOutput;
        assert.ok(typeof answer === 'string' && answer.length > 0, String(answer));
        const { answer: recorded } = await expressReceipt(api(), key, sent);
        assert.equal(answer, recorded);
        assert.match(String(result.lastResponseId), /^resp_/);
      });

      it("a second run given the first run's history and a new user turn: the request carries the first turn and the server read it", async () => {
        const key = await freshKey();
        const { runner, agent } = setup(key);
        const first = `Name a primary colour. ${randomUUID()}`;
        const second = `Now name another one. ${randomUUID()}`;
        const from = proxy().exchanges.length;
        const one = await viaClient(proxy(), 'first run()', () => runner.run(agent, first));
        const input: AgentInputItem[] = [...one.history, { role: 'user', content: second }];
        const two = await viaClient(proxy(), 'second run(history + user turn)', () => runner.run(agent, input));
        const sentOne = exchangeWith(posts(proxy(), '/responses', from), first);
        const sentTwo = exchangeWith(posts(proxy(), '/responses', from), second);
        assert.notEqual(sentOne, sentTwo);
        const answerOne = String(one.finalOutput);
        // The client sent the first turn (its question and the answer it got) before the new one.
        assert.deepEqual(turnsOf(bodyOf(sentTwo).input), [
          ['user', first],
          ['assistant', answerOne],
          ['user', second],
        ]);
        const r1 = await expressReceipt(api(), key, sentOne);
        const r2 = await expressReceipt(api(), key, sentTwo);
        assert.equal(answerOne, r1.answer);
        assert.ok(typeof two.finalOutput === 'string' && two.finalOutput.length > 0);
        assert.equal(two.finalOutput, r2.answer);
        // The seat read the whole conversation: its prompt grew by exactly the first answer and the new question.
        assert.equal(
          r2.receipt.seats[0].tokens_in - r1.receipt.seats[0].tokens_in,
          countMessagesTokens([text('user', first), text('assistant', answerOne), text('user', second)]) -
            countMessagesTokens([text('user', first)]),
        );
      });

      it('a second run given previousResponseId: the server answers with the first turn in the conversation', async () => {
        const key = await freshKey();
        const { runner, agent } = setup(key);
        const first = `Name a primary colour. ${randomUUID()}`;
        const second = `Now name another one. ${randomUUID()}`;
        const from = proxy().exchanges.length;
        const one = await viaClient(proxy(), 'first run()', () => runner.run(agent, first));
        const two = await viaClient(proxy(), 'second run(previousResponseId)', () =>
          runner.run(agent, second, { previousResponseId: one.lastResponseId }),
        );
        const sentOne = exchangeWith(posts(proxy(), '/responses', from), first);
        const sentTwo = exchangeWith(posts(proxy(), '/responses', from), second);
        assert.equal(bodyOf(sentTwo).previous_response_id, one.lastResponseId);
        assert.deepEqual(turnsOf(bodyOf(sentTwo).input), [['user', second]], 'the new turn alone: the server holds the first');
        const r1 = await expressReceipt(api(), key, sentOne);
        const r2 = await expressReceipt(api(), key, sentTwo);
        const answerOne = String(one.finalOutput);
        assert.equal(answerOne, r1.answer);
        assert.equal(two.finalOutput, r2.answer);
        assert.equal(
          r2.receipt.seats[0].tokens_in - r1.receipt.seats[0].tokens_in,
          countMessagesTokens([text('user', first), text('assistant', answerOne), text('user', second)]) -
            countMessagesTokens([text('user', first)]),
          'the stored first turn is in the seat prompt',
        );
      });
    });

    describe(`@langchain/openai ${LANGCHAIN_VERSION}, Form ${form}`, () => {
      const chat = (key: string, extra: { useResponsesApi?: boolean } = {}): ChatOpenAI =>
        new ChatOpenAI({ model, apiKey: key, configuration: { baseURL: baseURL() }, ...extra });

      it('invoke over chat completions: the answer is what the receipt records', async () => {
        const key = await freshKey();
        const from = proxy().exchanges.length;
        const message = await viaClient(proxy(), 'invoke()', () => chat(key).invoke(`Why is the sky blue? ${randomUUID()}`));
        const sent = onePost(proxy(), '/chat/completions', from);
        assert.ok(typeof message.content === 'string' && message.content.length > 0, JSON.stringify(message.content));
        assert.equal(message.content, (await expressReceipt(api(), key, sent)).answer);
      });

      it('withStructuredOutput(a zod 4 schema): parses, and matches the receipt field by field', async () => {
        const key = await freshKey();
        const from = proxy().exchanges.length;
        const value = await viaClient(proxy(), 'withStructuredOutput().invoke()', () =>
          chat(key).withStructuredOutput(Capital).invoke(`Name a European capital and its population. ${randomUUID()}`),
        );
        const sent = onePost(proxy(), '/chat/completions', from);
        assertCapital(value, (await expressReceipt(api(), key, sent)).answer);
      });

      it('the Responses API (useResponsesApi: true): the answer is what the receipt records', async () => {
        const key = await freshKey();
        const from = proxy().exchanges.length;
        const message = await viaClient(proxy(), 'invoke() over responses', () =>
          chat(key, { useResponsesApi: true }).invoke(`Why is the sky blue? ${randomUUID()}`),
        );
        const sent = onePost(proxy(), '/responses', from);
        assert.ok(message.text.length > 0, JSON.stringify(message.content));
        assert.equal(message.text, (await expressReceipt(api(), key, sent)).answer);
      });
    });

    describe(`ai ${AI_VERSION} + @ai-sdk/openai ${AI_OPENAI_VERSION}, Form ${form}`, () => {
      const provider = (key: string): ReturnType<typeof createOpenAI> => createOpenAI({ baseURL: baseURL(), apiKey: key });

      it('generateText over responses (the provider default): the answer is what the receipt records', async () => {
        const key = await freshKey();
        const from = proxy().exchanges.length;
        const result = await viaClient(proxy(), 'generateText()', () =>
          generateText({ model: provider(key)(model), prompt: `Why is the sky blue? ${randomUUID()}` }),
        );
        const sent = onePost(proxy(), '/responses', from);
        assert.ok(result.text.length > 0);
        assert.equal(result.text, (await expressReceipt(api(), key, sent)).answer);
      });

      it('generateText over .chat(): the answer is what the receipt records', async () => {
        const key = await freshKey();
        const from = proxy().exchanges.length;
        const result = await viaClient(proxy(), 'generateText() over chat', () =>
          generateText({ model: provider(key).chat(model), prompt: `Why is the sky blue? ${randomUUID()}` }),
        );
        const sent = onePost(proxy(), '/chat/completions', from);
        assert.ok(result.text.length > 0);
        assert.equal(result.text, (await expressReceipt(api(), key, sent)).answer);
      });

      it('streamText over responses: text deltas arrive as server-sent events and concatenate to the final text, the receipt’s', async () => {
        const key = await freshKey();
        const from = proxy().exchanges.length;
        const deltas: string[] = [];
        const errors: unknown[] = [];
        const final = await viaClient(proxy(), 'streamText()', async () => {
          const result = streamText({ model: provider(key)(model), prompt: `Why is the sky blue? ${randomUUID()}` });
          for await (const part of result.fullStream) {
            if (part.type === 'text-delta') deltas.push(part.text);
            if (part.type === 'error') errors.push(part.error);
          }
          if (errors.length > 0)
            throw new Error(`stream error: ${errors.map((e) => (e instanceof Error ? e.message : JSON.stringify(e))).join('; ')}`);
          return result.text;
        });
        const sent = onePost(proxy(), '/responses', from);
        assert.equal(bodyOf(sent).stream, true);
        assert.match(sent.contentType, /^text\/event-stream/);
        assert.ok(deltas.length > 0, 'at least one text delta');
        assert.ok(final.length > 0);
        assert.equal(deltas.join(''), final);
        assert.equal(final, (await expressReceipt(api(), key, sent)).answer);
      });

      it('generateObject with a zod schema (over responses): parses, and matches the receipt field by field', async () => {
        const key = await freshKey();
        const from = proxy().exchanges.length;
        const result = await viaClient(proxy(), 'generateObject()', () =>
          generateObject({
            model: provider(key)(model),
            schema: Capital,
            prompt: `Name a European capital and its population. ${randomUUID()}`,
          }),
        );
        const sent = onePost(proxy(), '/responses', from);
        assertCapital(result.object, (await expressReceipt(api(), key, sent)).answer);
      });

      it("generateText with Output.object (ai 7's replacement for generateObject) over responses: parses, matches the receipt", async () => {
        const key = await freshKey();
        const from = proxy().exchanges.length;
        const result = await viaClient(proxy(), 'generateText({output: Output.object()})', () =>
          generateText({
            model: provider(key)(model),
            output: Output.object({ schema: Capital }),
            prompt: `Name a European capital and its population. ${randomUUID()}`,
          }),
        );
        const sent = onePost(proxy(), '/responses', from);
        assertCapital(result.output, (await expressReceipt(api(), key, sent)).answer);
      });

      it('generateObject with a zod schema over .chat(): parses, and matches the receipt field by field', async () => {
        const key = await freshKey();
        const from = proxy().exchanges.length;
        const result = await viaClient(proxy(), 'generateObject() over chat', () =>
          generateObject({
            model: provider(key).chat(model),
            schema: Capital,
            prompt: `Name a European capital and its population. ${randomUUID()}`,
          }),
        );
        const sent = onePost(proxy(), '/chat/completions', from);
        assertCapital(result.object, (await expressReceipt(api(), key, sent)).answer);
      });
    });
  }
});
