import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureLocalModel, LOCAL_MODEL_NAME, startLocalModel, type LocalModelServer } from '../../../stack/local-model';
import { loadConfig } from '../../../infra/config';
import { toolEnv } from '../../../stack/tool-env';
import { call, newOrg, startApi, USER, type Api } from '../api/helpers';
import { customMode, startProductWorkers } from '../deliberation/helpers';

/**
 * Issue 40 item 4 on a real model behind a real server (llama.cpp's, SmolLM2-135M-Instruct; see local-model.test.ts):
 * a `response_format` JSON schema is enforced by the server's own grammar and the answer validates against it
 * (checked here field by field), and `max_tokens` limits the answer the server writes. Short: one express call each.
 */
const SCHEMA = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 40 },
    population: { type: 'integer', minimum: 0, maximum: 100_000_000 },
  },
  required: ['city', 'population'],
  additionalProperties: false,
};

describe('real model: response_format and max_tokens on llama.cpp (issue 40)', function () {
  this.timeout(300_000);
  let server: LocalModelServer;
  let workers: { stop(): Promise<void> };
  let api: Api;
  let dir: string;

  before(async () => {
    server = await startLocalModel(ensureLocalModel(toolEnv(loadConfig(), process.env)));
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-params-model-'));
    const file = path.join(dir, 'engines.json');
    const engine = (id: string, backup: string): Record<string, unknown> => ({
      id,
      protocol: 'openai',
      base_url: server.baseUrl,
      model: LOCAL_MODEL_NAME,
      maker: 'huggingface',
      tier: 'plus',
      input_usd_per_mtok: 1,
      output_usd_per_mtok: 2,
      context_tokens: 4096,
      max_output_tokens: 1024,
      hedging: false,
      backup,
    });
    // A backup must be another engine: the same model under a second id.
    fs.writeFileSync(
      file,
      JSON.stringify({ engines: [engine('local/smollm2', 'local/smollm2-b'), engine('local/smollm2-b', 'local/smollm2')] }),
    );
    const env = { ...process.env, QUORUM_ENGINES_FILE: file, QUORUM_ENGINE_TIMEOUT_MS: '60000' };
    workers = await startProductWorkers(env);
    api = await startApi('B', { env });
  });
  after(async () => {
    await api?.close();
    await workers?.stop();
    await server?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function expressMode(orgId: string): Promise<string> {
    const mode = await customMode(orgId, 'quorum-panel', {
      tiers: { experience: { seats: ['local/smollm2'] }, plus: { seats: ['local/smollm2'] } },
      staff: { judge: { engine: 'local/smollm2' }, synthesis: { engine: 'local/smollm2' } },
      express: 'always',
      seatMaxOutputTokens: 128,
    });
    return mode.ticker;
  }

  it('a json_schema response_format: the answer is JSON valid against the schema', async () => {
    const org = await newOrg(5);
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key: org.ownerKey,
      body: {
        model: await expressMode(org.orgId),
        messages: USER('What is the capital of France, and how many people live there?'),
        response_format: { type: 'json_schema', json_schema: { name: 'capital', strict: true, schema: SCHEMA } },
      },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const content = (r.body.choices as { message: { content: string } }[])[0]?.message.content ?? '';
    const answer = JSON.parse(content) as Record<string, unknown>;
    assert.deepEqual(Object.keys(answer).sort(), ['city', 'population'], content);
    assert.ok(typeof answer.city === 'string' && answer.city.length <= 40, content);
    const population = answer.population;
    assert.ok(typeof population === 'number' && Number.isInteger(population) && population >= 0 && population <= 100_000_000, content);
  });

  it('max_tokens: 20 limits the answer the server writes: at most 20 tokens, cut with finish_reason length', async () => {
    const org = await newOrg(5);
    const r = await call(api, 'POST', '/v1/chat/completions', {
      key: org.ownerKey,
      body: {
        model: await expressMode(org.orgId),
        messages: USER('Write a long, detailed essay on the history of the printing press, with many examples.'),
        max_tokens: 20,
      },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const usage = r.body.usage as { completion_tokens: number };
    assert.equal((r.body.choices as { finish_reason: string }[])[0]?.finish_reason, 'length');
    // The server's own count of what it wrote: one call, cut at the limit (no retry with more room past it).
    assert.equal(usage.completion_tokens, 20);
  });
});
