import type { ChildProcess } from 'node:child_process';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import { modeTemplate } from '../../../domain/mode-spec';
import { OPENAI_TEST_KEY, openAiReply, startOpenAiLoopback, type Loopback } from '../../fixtures/providers';
import { exitOf } from '../../harness/faults';
import { stack } from '../../harness/stack';
import { stackProcessEnv, startApiProcess } from '../../harness/worker';
import { call, newOrg, USER, type TestOrg } from '../api/helpers';
import { startProductWorkers } from '../deliberation/helpers';
import { connect, json, type ToolJson } from '../mcp/helpers';

/**
 * Issue 27 item 4: engines from QUORUM_ENGINES_FILE, through the product's own API process and workers. Two
 * OpenAI-compatible servers (a "local" one and a "hosted" gateway), each with its own key, are seated beside the
 * built-in openai/gpt-4.1 (on the service's key and base URL); each server accepts only its own key, so a request
 * with another's key would be refused and recorded.
 */

const LOCAL_KEY = 'local-llama-key-3e9d71c04ab2';
const HOSTED_KEY = 'sk-hosted-gateway-8c2f5a19d7e4';
/** Every engine answers with these counts, so each seat's cost is a whole number of micro-dollars to check. */
const TOKENS = { in: 1000, out: 300 };
/** USD per million tokens, from the file (configured) and the catalog (built-in). */
const PRICES: Readonly<Record<string, { in: number; out: number }>> = {
  'local/smollm2': { in: 0.05, out: 0.1 },
  'hosted/llama-3.3-70b': { in: 0.13, out: 0.39 },
  'openai/gpt-4.1': { in: 2, out: 8 },
};

describe('engines from QUORUM_ENGINES_FILE, seated beside a built-in engine', function () {
  this.timeout(120_000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-configured-engines-'));
  const enginesFile = path.join(dataDir, 'engines.yaml');
  let local: Loopback;
  let hosted: Loopback;
  let openai: Loopback;
  let workers: { stop(): Promise<void> } | undefined;
  let api: { child: ChildProcess; url: string } | undefined;
  let org: TestOrg;
  let mcp: Client;

  const reply = (text: string) => () => openAiReply({ text, promptTokens: TOKENS.in, completionTokens: TOKENS.out });

  before(async () => {
    local = await startOpenAiLoopback(reply('Local view: the sky scatters blue light most.'), { apiKey: LOCAL_KEY });
    hosted = await startOpenAiLoopback(reply('Hosted view: Rayleigh scattering favours short wavelengths.'), { apiKey: HOSTED_KEY });
    openai = await startOpenAiLoopback(reply('Built-in view: shorter wavelengths scatter more.'));
    fs.writeFileSync(
      enginesFile,
      toYaml({
        engines: [
          {
            id: 'local/smollm2',
            protocol: 'openai',
            base_url: local.baseUrl,
            api_key_env: 'TEST_LOCAL_LLAMA_KEY',
            model: 'smollm2-135m-instruct',
            maker: 'huggingface',
            tier: 'plus',
            input_usd_per_mtok: PRICES['local/smollm2']?.in,
            output_usd_per_mtok: PRICES['local/smollm2']?.out,
            context_tokens: 8192,
            max_output_tokens: 2048,
            concurrency: 1,
            hedging: false,
            backup: 'hosted/llama-3.3-70b',
          },
          {
            id: 'hosted/llama-3.3-70b',
            protocol: 'openai',
            base_url: hosted.baseUrl,
            api_key_env: 'TEST_HOSTED_KEY',
            model: 'meta-llama/llama-3.3-70b-instruct',
            maker: 'meta',
            tier: 'plus',
            input_usd_per_mtok: PRICES['hosted/llama-3.3-70b']?.in,
            output_usd_per_mtok: PRICES['hosted/llama-3.3-70b']?.out,
            context_tokens: 131072,
            max_output_tokens: 16384,
            backup: 'openai/gpt-4.1',
          },
        ],
      }),
    );
    const env = {
      QUORUM_ENGINES_FILE: enginesFile,
      TEST_LOCAL_LLAMA_KEY: LOCAL_KEY,
      TEST_HOSTED_KEY: HOSTED_KEY,
      QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY,
      QUORUM_OPENAI_BASE_URL: openai.baseUrl,
    };
    workers = await startProductWorkers(env);
    api = await startApiProcess(stackProcessEnv(dataDir, { ...env, QUORUM_FORM: 'B' }));
    org = await newOrg();
    mcp = await connect(api, org.ownerKey);
  });
  after(async () => {
    await mcp?.close();
    if (api && api.child.exitCode === null && api.child.signalCode === null) {
      const exit = exitOf(api.child);
      api.child.kill('SIGKILL');
      await exit;
    }
    await workers?.stop();
    await Promise.all([local?.close(), hosted?.close(), openai?.close()]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  afterEach(() => {
    assert.deepEqual(
      [...local.rejected, ...hosted.rejected, ...openai.rejected].map((r) => r.reason),
      [],
      'each server got well-formed requests with its own key',
    );
  });

  function apiOf(): { url: string } {
    assert.ok(api, 'the API process is up');
    return api;
  }

  async function tool(name: string, args: Record<string, unknown>): Promise<ToolJson> {
    return json(await mcp.callTool({ name, arguments: args }));
  }

  /** A mode seating both configured engines beside the built-in one; staff on the built-in engine. */
  function spec(ticker: string, plus: readonly string[]): Record<string, unknown> {
    const template = modeTemplate();
    // No auto seats, so no pool.
    delete template.auto;
    return {
      ...template,
      name: `Configured ${randomUUID().slice(0, 6)}`,
      ticker,
      seats_by_tier: { experience: ['openai/gpt-4.1-mini'], plus },
      staff: { judge: { tier: 'plus', engine: 'openai/gpt-4.1' }, synthesis: { tier: 'plus', engine: 'openai/gpt-4.1' } },
      rounds: 1,
      critique: 'never',
      grounding: 'off',
      express: 'never',
      skip_synthesis_when_converged: false,
    };
  }
  const PANEL = ['local/smollm2', 'hosted/llama-3.3-70b', 'openai/gpt-4.1'];

  it('list_engines shows them with the file’s family, maker, prices, limits and backup, available here', async () => {
    const listed = (await tool('list_engines', { tier: 'plus' })).data as Record<string, unknown>[];
    const FIELDS = [
      'id',
      'family',
      'maker',
      'tier',
      'input_usd_per_mtok',
      'output_usd_per_mtok',
      'context_tokens',
      'max_output_tokens',
      'default_backup',
      'simulated',
      'available',
    ];
    const mine = listed
      .filter((e) => e.id === 'local/smollm2' || e.id === 'hosted/llama-3.3-70b')
      .map((e) => Object.fromEntries(FIELDS.map((k) => [k, e[k]])));
    assert.deepEqual(mine, [
      {
        id: 'hosted/llama-3.3-70b',
        family: 'hosted',
        maker: 'meta',
        tier: 'plus',
        input_usd_per_mtok: 0.13,
        output_usd_per_mtok: 0.39,
        context_tokens: 131072,
        max_output_tokens: 16384,
        default_backup: 'openai/gpt-4.1',
        simulated: false,
        available: 'yes',
      },
      {
        id: 'local/smollm2',
        family: 'local',
        maker: 'huggingface',
        tier: 'plus',
        input_usd_per_mtok: 0.05,
        output_usd_per_mtok: 0.1,
        context_tokens: 8192,
        max_output_tokens: 2048,
        default_backup: 'hosted/llama-3.3-70b',
        simulated: false,
        available: 'yes',
      },
    ]);
    assert.ok(
      listed.some((e) => e.id === 'openai/gpt-4.1'),
      'the built-in catalog is still listed',
    );
  });

  it('mode validation accepts them and answers seat_engine_not_found for an id in neither the catalog nor the file', async () => {
    assert.equal((await tool('validate_mode', { spec: spec('CFGV', PANEL) })).valid, true);
    const checked = await tool('validate_mode', { spec: spec('CFGV', ['local/smollm3', 'hosted/llama-3.3-70b', 'openai/gpt-4.1']) });
    assert.equal(checked.valid, false);
    const refusals = checked.refusals as { body: { error: { code: string; param: string } } }[];
    assert.deepEqual(
      refusals.map((r) => [r.body.error.code, r.body.error.param]),
      [['seat_engine_not_found', 'seats_by_tier.plus[0]']],
    );
  });

  it('a mode seats them: a completion through the HTTP API calls each at its own base URL with its own key; the receipt prices them from the file', async () => {
    const saved = await tool('save_mode', { spec: spec('CFGE', PANEL), release: true });
    assert.equal(saved.error, undefined, JSON.stringify(saved));
    const ticker = String(saved.ticker);
    const messages = USER('Why is the sky blue? Explain the physics step by step.');

    // The quote prices the configured seats too (an engine without a price leaves no estimate).
    const est = await call(apiOf(), 'POST', '/v1/estimate', { key: org.ownerKey, body: { model: ticker, messages } });
    assert.equal(est.status, 200, JSON.stringify(est.body));
    const quoted = est.body.estimate as { gateway_usd: number } | null;
    assert.ok(quoted && quoted.gateway_usd > 0, JSON.stringify(est.body));

    const done = await call(apiOf(), 'POST', '/v1/chat/completions', { key: org.ownerKey, body: { model: ticker, messages } });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    const requestId = String(done.body.svc?.request_id);

    // Each configured engine on its own server, with its own key and model name; the built-in one on the service's.
    const seen = (server: Loopback): [string | undefined, string][] =>
      server.requests.map((r) => [r.headers.authorization, (r.body as { model: string }).model]);
    assert.deepEqual(seen(local), [[`Bearer ${LOCAL_KEY}`, 'smollm2-135m-instruct']]);
    assert.deepEqual(seen(hosted), [[`Bearer ${HOSTED_KEY}`, 'meta-llama/llama-3.3-70b-instruct']]);
    assert.ok(seen(openai).length >= 1);
    for (const r of seen(openai)) assert.deepEqual(r, [`Bearer ${OPENAI_TEST_KEY}`, 'gpt-4.1']);

    // Each seat billed its tokens at its engine's price, in whole micro-dollars: what the receipt stores and shows.
    const receipt = await call(apiOf(), 'GET', `/v1/receipts/${requestId}`, { key: org.ownerKey });
    assert.equal(receipt.status, 200, JSON.stringify(receipt.body));
    const rows = (receipt.body.receipt as { seats: { model_used: string; tokens_in: number; tokens_out: number; real_cost_usd: number }[] })
      .seats;
    assert.deepEqual(rows.map((r) => r.model_used).sort(), [...PANEL].sort());
    const stored = (await stack().db('receipt_seats').where({ request_id: requestId }).select('model_used', 'real_cost_micros')) as {
      model_used: string;
      real_cost_micros: string;
    }[];
    for (const row of rows) {
      const price = PRICES[row.model_used];
      assert.ok(price, row.model_used);
      assert.deepEqual([row.tokens_in, row.tokens_out], [TOKENS.in, TOKENS.out], row.model_used);
      // Tokens × USD per million tokens is micro-dollars; these counts make every product whole.
      const expected = Math.round(row.tokens_in * price.in + row.tokens_out * price.out);
      assert.equal(Number(stored.find((s) => s.model_used === row.model_used)?.real_cost_micros), expected, row.model_used);
      assert.equal(row.real_cost_usd, expected / 1_000_000, row.model_used);
    }
    assert.deepEqual(Object.fromEntries(stored.map((s) => [s.model_used, Number(s.real_cost_micros)])), {
      'local/smollm2': 80,
      'hosted/llama-3.3-70b': 247,
      'openai/gpt-4.1': 4400,
    });
  });

  it('a wrong file stops the API at start', async () => {
    const bad = path.join(dataDir, 'bad.yaml');
    fs.writeFileSync(bad, toYaml({ engines: [{ id: 'local/x', protocol: 'openai', base_url: 'not a url' }] }));
    await assert.rejects(
      startApiProcess(stackProcessEnv(dataDir, { QUORUM_ENGINES_FILE: bad })),
      /api\/main exited \(code 1\) before it was ready/,
    );
  });
});
