import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../../infra/config';
import { countMessagesTokens } from '../../../domain/tokens';
import type { ChatMessage } from '../../../domain/messages';
import { ensureVenv } from '../../../stack/python-venv';
import { toolEnv } from '../../../stack/tool-env';
import {
  describeExchanges,
  exchangeWith,
  expressReceipt,
  posts,
  proxiedApis,
  turnsOf,
  type Exchange,
  type RecordingProxy,
} from './client-proxy';
import { EXPRESS, FORMS, newKey, newOrg, type Api } from './helpers';
import { pythonOutput } from './python-script';

/**
 * Issue 53 item 1, the Python clients, pinned on PyPI and installed by the project's own script (stack/python-venv.ts,
 * once per user): the OpenAI Agents SDK (`openai-agents`, whose default model speaks `/v1/responses`) and LangChain
 * (`langchain-openai`), each given the API's base URL, a key and a mode key as its model, and nothing else. The one
 * setting changed is the Agents SDK's tracing exporter, which would post every run's trace to api.openai.com: it is not
 * the API under test (`set_tracing_disabled(True)`).
 *
 * Each script runs every case of its client and prints one JSON object: per case what the client returned, or the
 * exception it raised (its HTTP status and the server's body). The clients reach the API through a recording
 * pass-through (client-proxy.ts), so each test also reads what the client sent. The mode is the express lane (one
 * seat, whose answer is the answer): every answer is checked against the seat's answer on the call's receipt.
 */
const AGENTS_VERSION = '0.24.0';
const LANGCHAIN_OPENAI_VERSION = '1.7.4';
const VENV = {
  name: `clients-python-agents-${AGENTS_VERSION}-langchain-openai-${LANGCHAIN_OPENAI_VERSION}`,
  packages: [`openai-agents==${AGENTS_VERSION}`, `langchain-openai==${LANGCHAIN_OPENAI_VERSION}`],
};

/** What a case printed: the client's result, or what it raised. */
type Case = Record<string, unknown> & {
  error?: { type: string; status: number | null; body: unknown; message: string };
};

const FAILURE = String.raw`
def failure(e):
    return {"error": {"type": type(e).__name__, "status": getattr(e, "status_code", None),
                      "body": getattr(e, "body", None), "message": str(e)[:1000]}}
`;

const AGENTS_SCRIPT = String.raw`
import asyncio, json, os
from agents import Agent, OpenAIProvider, RunConfig, Runner, set_tracing_disabled
${FAILURE}
async def main():
    # The trace exporter posts each run's trace to api.openai.com, which is not the API under test.
    set_tracing_disabled(True)
    config = RunConfig(model_provider=OpenAIProvider(base_url=os.environ["BASE_URL"], api_key=os.environ["KEY"]))
    agent = Agent(name="Assistant", instructions=os.environ["INSTRUCTIONS"], model=os.environ["MODEL"])
    out = {}
    try:
        one = await Runner.run(agent, os.environ["FIRST"], run_config=config)
        out["answer"] = {"final_output": one.final_output, "last_response_id": one.last_response_id}
    except Exception as e:
        out["answer"] = failure(e)
        print(json.dumps(out, default=str))
        return
    try:
        history = one.to_input_list() + [{"role": "user", "content": os.environ["SECOND"]}]
        two = await Runner.run(agent, history, run_config=config)
        out["history"] = {"final_output": two.final_output}
    except Exception as e:
        out["history"] = failure(e)
    try:
        three = await Runner.run(agent, os.environ["THIRD"], previous_response_id=one.last_response_id, run_config=config)
        out["previous_response_id"] = {"final_output": three.final_output}
    except Exception as e:
        out["previous_response_id"] = failure(e)
    print(json.dumps(out, default=str))

asyncio.run(main())
`;

const LANGCHAIN_SCRIPT = String.raw`
import json, os
from pydantic import BaseModel, Field
from langchain_openai import ChatOpenAI
${FAILURE}
class Capital(BaseModel):
    city: str = Field(max_length=80)
    population: int = Field(ge=0)
    coastal: bool

def text_of(message):
    t = message.text
    return str(t() if callable(t) else t)

chat = ChatOpenAI(model=os.environ["MODEL"], base_url=os.environ["BASE_URL"], api_key=os.environ["KEY"])
out = {}
try:
    out["invoke"] = {"content": chat.invoke(os.environ["INVOKE"]).content}
except Exception as e:
    out["invoke"] = failure(e)
try:
    value = chat.with_structured_output(Capital).invoke(os.environ["STRUCTURED"])
    out["structured"] = {"type": type(value).__name__, "value": value.model_dump()}
except Exception as e:
    out["structured"] = failure(e)
try:
    responses = ChatOpenAI(model=os.environ["MODEL"], base_url=os.environ["BASE_URL"], api_key=os.environ["KEY"], use_responses_api=True)
    out["responses"] = {"text": text_of(responses.invoke(os.environ["RESPONSES"]))}
except Exception as e:
    out["responses"] = failure(e)
print(json.dumps(out, default=str))
`;

/** The script's cases: the last line it printed, one JSON object. */
async function runCases(python: string, script: string, env: Record<string, string>): Promise<Record<string, Case>> {
  const out = await pythonOutput(python, script, env);
  try {
    return JSON.parse(out.trim().split('\n').pop() ?? '') as Record<string, Case>;
  } catch {
    throw new Error(`python printed no result: ${out}`);
  }
}

/** A case's result, or a failure naming the exception, the server's status and body, and the exchanges of the run. */
function passed(result: Case | undefined, what: string, proxy: RecordingProxy, from: number): Case {
  assert.ok(result, `${what}: the script printed no result (an earlier case failed first)`);
  if (result.error) {
    const e = result.error;
    assert.fail(
      `${what} raised ${e.type} (HTTP ${String(e.status)}): ${JSON.stringify(e.body)}\n${e.message}\nexchanges:\n${describeExchanges(proxy.exchanges, from)}`,
    );
  }
  return result;
}

const text = (role: ChatMessage['role'], content: string): ChatMessage => ({ role, content });
const bodyOf = (e: Exchange): Record<string, unknown> => e.request as Record<string, unknown>;

describe('the Python clients by base URL alone (issue 53 item 1, sim engines)', function () {
  this.timeout(10 * 60_000);
  let python: string;
  const stack = proxiedApis();
  before(() => {
    ({ python } = ensureVenv(VENV, toolEnv(loadConfig(), process.env)));
  });

  for (const form of FORMS) {
    const model = EXPRESS[form];
    const api = (): Api => stack.api(form);
    const proxy = (): RecordingProxy => stack.proxy(form);

    describe(`openai-agents ${AGENTS_VERSION}, Form ${form}`, () => {
      const instructions = 'You are a concise assistant. Answer in one short paragraph.';
      const first = `Name a primary colour. ${randomUUID()}`;
      const second = `Now name another one. ${randomUUID()}`;
      const third = `And a third one? ${randomUUID()}`;
      let key: string;
      let from: number;
      let out: Record<string, Case>;
      before(async () => {
        key = await newKey((await newOrg(5)).orgId, { limits: { requestsPerMinute: 1_000 } });
        from = proxy().exchanges.length;
        out = await runCases(python, AGENTS_SCRIPT, {
          BASE_URL: `${proxy().url}/v1`,
          KEY: key,
          MODEL: model,
          INSTRUCTIONS: instructions,
          FIRST: first,
          SECOND: second,
          THIRD: third,
        });
      });
      const firstTurn = async (): Promise<{ answer: string; receipt: Awaited<ReturnType<typeof expressReceipt>> }> => {
        const answer = String(passed(out.answer, 'Runner.run()', proxy(), from).final_output);
        return { answer, receipt: await expressReceipt(api(), key, exchangeWith(posts(proxy(), '/responses', from), first)) };
      };
      const grewBy = (turnOne: string, answerOne: string, turnTwo: string): number =>
        countMessagesTokens([text('user', turnOne), text('assistant', answerOne), text('user', turnTwo)]) -
        countMessagesTokens([text('user', turnOne)]);

      it('an agent answers over /v1/responses, its default model; the answer is what the receipt records', async () => {
        const result = passed(out.answer, 'Runner.run()', proxy(), from);
        const sent = exchangeWith(posts(proxy(), '/responses', from), first);
        assert.equal(bodyOf(sent).model, model);
        assert.equal(bodyOf(sent).instructions, instructions);
        assert.ok(typeof result.final_output === 'string' && result.final_output.length > 0, JSON.stringify(result));
        assert.equal(result.final_output, (await firstTurn()).receipt.answer);
        assert.match(String(result.last_response_id), /^resp_/);
      });

      it("a second run given the first's to_input_list() and a new user turn: the request carries the first turn and the server read it", async () => {
        const one = await firstTurn();
        const result = passed(out.history, 'Runner.run(history + user turn)', proxy(), from);
        const sent = exchangeWith(posts(proxy(), '/responses', from), second);
        assert.deepEqual(turnsOf(bodyOf(sent).input), [
          ['user', first],
          ['assistant', one.answer],
          ['user', second],
        ]);
        const two = await expressReceipt(api(), key, sent);
        assert.ok(typeof result.final_output === 'string' && result.final_output.length > 0);
        assert.equal(result.final_output, two.answer);
        assert.equal(two.receipt.seats[0].tokens_in - one.receipt.receipt.seats[0].tokens_in, grewBy(first, one.answer, second));
      });

      it('a second run given previous_response_id: the server answers with the first turn in the conversation', async () => {
        const one = await firstTurn();
        const result = passed(out.previous_response_id, 'Runner.run(previous_response_id=…)', proxy(), from);
        const sent = exchangeWith(posts(proxy(), '/responses', from), third);
        assert.equal(bodyOf(sent).previous_response_id, (out.answer as Case).last_response_id);
        assert.deepEqual(turnsOf(bodyOf(sent).input), [['user', third]], 'the new turn alone: the server holds the first');
        const three = await expressReceipt(api(), key, sent);
        assert.equal(result.final_output, three.answer);
        assert.equal(
          three.receipt.seats[0].tokens_in - one.receipt.receipt.seats[0].tokens_in,
          grewBy(first, one.answer, third),
          'the stored first turn is in the seat prompt',
        );
      });
    });

    describe(`langchain-openai ${LANGCHAIN_OPENAI_VERSION}, Form ${form}`, () => {
      const prompts = {
        INVOKE: `Why is the sky blue? ${randomUUID()}`,
        STRUCTURED: `Name a European capital and its population. ${randomUUID()}`,
        RESPONSES: `Why is the sea blue? ${randomUUID()}`,
      };
      let key: string;
      let from: number;
      let out: Record<string, Case>;
      before(async () => {
        key = await newKey((await newOrg(5)).orgId, { limits: { requestsPerMinute: 1_000 } });
        from = proxy().exchanges.length;
        out = await runCases(python, LANGCHAIN_SCRIPT, { BASE_URL: `${proxy().url}/v1`, KEY: key, MODEL: model, ...prompts });
      });

      it('invoke over chat completions: the answer is what the receipt records', async () => {
        const result = passed(out.invoke, 'ChatOpenAI.invoke()', proxy(), from);
        const sent = exchangeWith(posts(proxy(), '/chat/completions', from), prompts.INVOKE);
        assert.ok(typeof result.content === 'string' && result.content.length > 0, JSON.stringify(result));
        assert.equal(result.content, (await expressReceipt(api(), key, sent)).answer);
      });

      it('with_structured_output(a pydantic model): a Capital, matching the receipt field by field', async () => {
        const result = passed(out.structured, 'with_structured_output(Capital).invoke()', proxy(), from);
        const sent = exchangeWith(posts(proxy(), '/chat/completions', from), prompts.STRUCTURED);
        assert.equal(result.type, 'Capital');
        const value = result.value as { city: string; population: number; coastal: boolean };
        assert.deepEqual(Object.keys(value).sort(), ['city', 'coastal', 'population']);
        assert.ok(typeof value.city === 'string' && value.city.length <= 80, JSON.stringify(value));
        assert.ok(Number.isInteger(value.population) && value.population >= 0, JSON.stringify(value));
        assert.equal(typeof value.coastal, 'boolean');
        const written = JSON.parse((await expressReceipt(api(), key, sent)).answer) as typeof value;
        assert.equal(value.city, written.city);
        assert.equal(value.population, written.population);
        assert.equal(value.coastal, written.coastal);
      });

      it('the Responses API (use_responses_api=True): the answer is what the receipt records', async () => {
        const result = passed(out.responses, 'ChatOpenAI(use_responses_api=True).invoke()', proxy(), from);
        const sent = exchangeWith(posts(proxy(), '/responses', from), prompts.RESPONSES);
        assert.ok(typeof result.text === 'string' && result.text.length > 0, JSON.stringify(result));
        assert.equal(result.text, (await expressReceipt(api(), key, sent)).answer);
      });
    });
  }
});
