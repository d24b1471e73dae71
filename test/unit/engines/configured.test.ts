import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import { CATALOG, createEngines, type EngineSpec } from '../../../engines';
import { EnginesFileError, parseEnginesFile, readEnginesFile, type ConfiguredEngine } from '../../../engines/configured';
import { engineCostMicros } from '../../../domain/pricing';
import { redact } from '../../../infra/redact';
import { OPENAI_TEST_KEY, openAiReply, startOpenAiLoopback, type Loopback, type RecordedRequest } from '../../fixtures/providers';
import { engineFailure, MESSAGES } from './helpers';
import { settingsOf } from '../../harness/settings';

const BUILT_IN: ReadonlyMap<string, EngineSpec> = new Map(CATALOG.map((s) => [s.id, s]));

/** One local llama.cpp seat (keyless, one slot, no hedging) and a hosted gateway engine, as a team would write them. */
const LOCAL = {
  id: 'local/smollm2',
  protocol: 'openai',
  base_url: 'http://127.0.0.1:8080/v1',
  model: 'smollm2-135m-instruct',
  maker: 'huggingface',
  tier: 'experience',
  input_usd_per_mtok: 0,
  output_usd_per_mtok: 0,
  context_tokens: 8192,
  max_output_tokens: 2048,
  structured_output: true,
  concurrency: 1,
  hedging: false,
  backup: 'openai/gpt-4.1-mini',
};
const GATEWAY = {
  id: 'gateway/llama-3.3-70b',
  protocol: 'openai',
  base_url: 'https://openrouter.ai/api/v1',
  api_key_env: 'OPENROUTER_API_KEY',
  model: 'meta-llama/llama-3.3-70b-instruct',
  tier: 'plus',
  input_usd_per_mtok: 0.13,
  output_usd_per_mtok: 0.39,
  context_tokens: 131072,
  max_output_tokens: 16384,
  backup: 'local/smollm2',
};

function yamlOf(entries: readonly unknown[]): string {
  return toYaml({ engines: entries });
}

/** The file's problems, one per line, as the process would print them at start. */
function problems(text: string, format: 'yaml' | 'json' = 'yaml'): string[] {
  try {
    parseEnginesFile(text, format, BUILT_IN);
  } catch (err) {
    assert.ok(err instanceof EnginesFileError, String(err));
    return err.message.split('\n');
  }
  assert.fail('expected the file to be refused');
}

/** The second entry changed (LOCAL stays first, so every message names `engines[1]`). */
function withSecond(change: Record<string, unknown>, drop: readonly string[] = []): string {
  const entry: Record<string, unknown> = { ...GATEWAY, ...change };
  for (const key of drop) delete entry[key];
  return yamlOf([LOCAL, entry]);
}

describe('QUORUM_ENGINES_FILE: the parser', () => {
  it('reads YAML: every field, defaults filled in, family and maker from the id unless given', () => {
    const [local, gateway] = parseEnginesFile(yamlOf([LOCAL, GATEWAY]), 'yaml', BUILT_IN);
    assert.deepEqual(local, {
      spec: {
        id: 'local/smollm2',
        family: 'local',
        maker: 'huggingface',
        protocol: 'openai',
        model: 'smollm2-135m-instruct',
        tier: 'experience',
        inputUsdPerMtok: 0,
        outputUsdPerMtok: 0,
        contextTokens: 8192,
        maxOutputTokens: 2048,
        backup: 'openai/gpt-4.1-mini',
        reasoning: false,
        structuredOutput: true,
        hedging: false,
        concurrency: 1,
      },
      baseUrl: 'http://127.0.0.1:8080/v1',
      apiKeyEnv: undefined,
    } satisfies ConfiguredEngine);
    assert.deepEqual(
      [gateway?.spec.family, gateway?.spec.maker, gateway?.spec.reasoning, gateway?.spec.structuredOutput, gateway?.spec.hedging],
      ['gateway', 'gateway', false, true, true],
    );
    assert.equal(gateway?.spec.concurrency, undefined, 'no limit unless one is set');
    assert.equal(gateway?.apiKeyEnv, 'OPENROUTER_API_KEY');
  });

  it('reads the same engines from JSON', () => {
    const json = JSON.stringify({ engines: [LOCAL, GATEWAY] }, null, 2);
    assert.deepEqual(parseEnginesFile(json, 'json', BUILT_IN), parseEnginesFile(yamlOf([LOCAL, GATEWAY]), 'yaml', BUILT_IN));
  });

  it('takes a bedrock engine without a base URL or key (the service AWS credentials sign it)', () => {
    const [bedrock] = parseEnginesFile(
      yamlOf([
        { ...GATEWAY, id: 'aws/mistral-large', protocol: 'bedrock', base_url: undefined, api_key_env: undefined, backup: 'openai/gpt-4.1' },
      ]),
      'yaml',
      BUILT_IN,
    );
    assert.equal(bedrock?.spec.protocol, 'bedrock');
    assert.equal(bedrock?.baseUrl, undefined);
  });

  const CASES: readonly { what: string; text: () => string; line: string }[] = [
    {
      what: 'a base URL that is not one',
      text: () => withSecond({ base_url: 'openrouter.ai' }),
      line: 'engines[1] (gateway/llama-3.3-70b): base_url: must be an http(s) URL',
    },
    {
      what: 'no base URL on an API-key protocol',
      text: () => withSecond({}, ['base_url']),
      line: 'engines[1] (gateway/llama-3.3-70b): base_url: is required for protocol openai',
    },
    {
      what: 'a missing field',
      text: () => withSecond({}, ['model']),
      line: 'engines[1] (gateway/llama-3.3-70b): model: is required',
    },
    {
      what: 'an unknown protocol',
      text: () => withSecond({ protocol: 'ollama' }),
      line: 'engines[1] (gateway/llama-3.3-70b): protocol: must be one of openai, anthropic, google, bedrock',
    },
    {
      what: 'an unknown tier',
      text: () => withSecond({ tier: 'gold' }),
      line: 'engines[1] (gateway/llama-3.3-70b): tier: must be one of experience, plus, pro',
    },
    {
      what: 'a negative price',
      text: () => withSecond({ output_usd_per_mtok: -1 }),
      line: 'engines[1] (gateway/llama-3.3-70b): output_usd_per_mtok: must be 0 or more',
    },
    {
      what: 'a price that is not a number',
      text: () => withSecond({ input_usd_per_mtok: '0.13$' }),
      line: 'engines[1] (gateway/llama-3.3-70b): input_usd_per_mtok: must be a number (USD per million tokens)',
    },
    {
      what: 'a fractional token limit',
      text: () => withSecond({ context_tokens: 1000.5 }),
      line: 'engines[1] (gateway/llama-3.3-70b): context_tokens: must be a whole number of tokens',
    },
    {
      what: 'an output limit above the context',
      text: () => withSecond({ max_output_tokens: 200_000 }),
      line: 'engines[1] (gateway/llama-3.3-70b): max_output_tokens: must not exceed context_tokens',
    },
    {
      what: 'a key pasted where its variable name goes',
      text: () => withSecond({ api_key_env: 'sk-or-v1-abc' }),
      line: 'engines[1] (gateway/llama-3.3-70b): api_key_env: must be the name of an environment variable (the key itself never goes in the file)',
    },
    {
      what: 'a key variable on bedrock',
      text: () => withSecond({ protocol: 'bedrock' }),
      line: 'engines[1] (gateway/llama-3.3-70b): api_key_env: bedrock engines use the service AWS credentials, not a key',
    },
    {
      what: 'a concurrency of 0',
      text: () => withSecond({ concurrency: 0 }),
      line: 'engines[1] (gateway/llama-3.3-70b): concurrency: must be above 0',
    },
    {
      what: 'a flag that is not a boolean',
      text: () => withSecond({ hedging: 'no' }),
      line: 'engines[1] (gateway/llama-3.3-70b): hedging: must be true or false',
    },
    {
      what: 'an id that is not family/name',
      text: () => withSecond({ id: 'Llama 3.3' }),
      line: 'engines[1] (Llama 3.3): id: must be family/name, the family in lowercase letters, digits and -',
    },
    {
      what: 'an unknown field (a typo)',
      text: () => withSecond({ max_ouput_tokens: 4096 }),
      line: 'engines[1] (gateway/llama-3.3-70b): max_ouput_tokens: unknown field',
    },
    {
      what: 'an id clashing with a built-in engine',
      text: () => withSecond({ id: 'openai/gpt-4.1' }),
      line: 'engines[1] (openai/gpt-4.1): id: is a built-in engine; a configured one needs an id of its own',
    },
    {
      what: "a built-in family's prefix",
      text: () => withSecond({ id: 'openai/gpt-5.1' }),
      line: 'engines[1] (openai/gpt-5.1): id: the family "openai" is the built-in catalog\'s; give the engine a family of its own, e.g. local/',
    },
    {
      what: 'an id given twice',
      text: () => withSecond({ id: LOCAL.id, backup: 'openai/gpt-4.1' }),
      line: 'engines[1] (local/smollm2): id: repeats engines[0]',
    },
    {
      what: 'a backup that is no engine',
      text: () => withSecond({ backup: 'gateway/llama-3.1-405b' }),
      line: 'engines[1] (gateway/llama-3.3-70b): backup: no engine "gateway/llama-3.1-405b" (built-in or in this file)',
    },
    {
      what: 'an engine backing itself up',
      text: () => withSecond({ backup: GATEWAY.id }),
      line: 'engines[1] (gateway/llama-3.3-70b): backup: must be another engine, not itself',
    },
    {
      what: 'an entry that is not a mapping',
      text: () => yamlOf([LOCAL, 'gateway/llama-3.3-70b']),
      line: 'engines[1]: must be a mapping of fields',
    },
  ];
  for (const c of CASES)
    it(`names the entry and the field: ${c.what}`, () => {
      assert.deepEqual(problems(c.text()), [`QUORUM_ENGINES_FILE ${c.line}`]);
    });

  it('names every problem of the file at once, each entry on its own line', () => {
    // The gateway backs up to the refused local entry: only the local entry's own problems are named for it.
    const text = yamlOf([{ ...LOCAL, base_url: 'nope', tokens: 5 }, GATEWAY, { ...GATEWAY, id: 'gateway/other', backup: 'nobody/here' }]);
    assert.deepEqual(problems(text), [
      'QUORUM_ENGINES_FILE engines[0] (local/smollm2): base_url: must be an http(s) URL',
      'QUORUM_ENGINES_FILE engines[0] (local/smollm2): tokens: unknown field',
      'QUORUM_ENGINES_FILE engines[2] (gateway/other): backup: no engine "nobody/here" (built-in or in this file)',
    ]);
  });

  it('refuses a file of the wrong shape or syntax', () => {
    assert.deepEqual(problems('engine:\n  - id: local/x\n'), [
      'QUORUM_ENGINES_FILE engines: is required',
      'QUORUM_ENGINES_FILE engine: unknown field',
    ]);
    assert.deepEqual(problems('engines: local/x\n'), ['QUORUM_ENGINES_FILE engines: must be a list']);
    assert.deepEqual(problems('- local/x\n'), ['QUORUM_ENGINES_FILE must hold a mapping with an `engines` list']);
    assert.match(problems('engines: [\n').join('\n'), /^QUORUM_ENGINES_FILE is not valid YAML: /);
    assert.match(problems('{"engines": [}', 'json').join('\n'), /^QUORUM_ENGINES_FILE is not valid JSON: /);
    assert.deepEqual(parseEnginesFile('engines: []\n', 'yaml', BUILT_IN), []);
  });

  it('reads the file QUORUM_ENGINES_FILE names, JSON by its .json name; none when unset; an unreadable one names its path', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-engines-'));
    try {
      const json = path.join(dir, 'engines.json');
      fs.writeFileSync(json, JSON.stringify({ engines: [LOCAL, GATEWAY] }));
      assert.deepEqual(
        readEnginesFile(json, BUILT_IN).map((e) => e.spec.id),
        [LOCAL.id, GATEWAY.id],
      );
      assert.deepEqual(readEnginesFile(undefined, BUILT_IN), []);
      const missing = path.join(dir, 'nope.yaml');
      assert.throws(
        () => readEnginesFile(missing, BUILT_IN),
        (e: Error) => e.message.startsWith(`QUORUM_ENGINES_FILE (${missing}) cannot be read: `),
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('QUORUM_ENGINES_FILE: the engines beside the catalog', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quorum-engines-'));
  const LOCAL_KEY = 'local-vllm-key-5c1e8a7f93d2';
  let local: Loopback;
  let gateway: Loopback;
  let openai: Loopback;
  /** Requests each server has in flight now, and the most it ever had. */
  const load = { now: 0, most: 0 };

  before(async () => {
    // Each server takes only its own key: a request with another engine's key is refused and recorded.
    local = await startOpenAiLoopback(
      async (req) => {
        load.now += 1;
        load.most = Math.max(load.most, load.now);
        await new Promise((r) => setTimeout(r, text(req).includes('[[slow]]') ? 150 : 0));
        load.now -= 1;
        return openAiReply({ text: 'local answer', promptTokens: 40, completionTokens: 7 });
      },
      { apiKey: LOCAL_KEY },
    );
    gateway = await startOpenAiLoopback(() => openAiReply({ text: 'gateway answer', promptTokens: 1000, completionTokens: 333 }), {
      apiKey: 'sk-or-v1-gateway-loopback-1b2c3d4e',
    });
    openai = await startOpenAiLoopback(() => openAiReply({ text: 'openai answer' }));
  });
  after(async () => {
    await Promise.all([local.close(), gateway.close(), openai.close()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  afterEach(() => {
    assert.deepEqual(
      [...local.rejected, ...gateway.rejected, ...openai.rejected].map((r) => r.reason),
      [],
      'each server got its own key',
    );
  });

  function text(req: RecordedRequest): string {
    return req.bodyText;
  }

  /** Engines with a file of `entries` and the env around it. */
  function enginesWith(entries: readonly unknown[], env: NodeJS.ProcessEnv = {}): ReturnType<typeof createEngines> {
    const file = path.join(dir, `engines-${Math.random().toString(36).slice(2)}.yaml`);
    fs.writeFileSync(file, yamlOf(entries));
    return createEngines({
      ...settingsOf({ QUORUM_ENGINES_FILE: file, QUORUM_OPENAI_API_KEY: OPENAI_TEST_KEY, QUORUM_OPENAI_BASE_URL: openai.baseUrl, ...env }),
    });
  }

  const localEntry = (): Record<string, unknown> => ({ ...LOCAL, base_url: local.baseUrl, api_key_env: 'LOCAL_KEY' });
  const gatewayEntry = (): Record<string, unknown> => ({ ...GATEWAY, base_url: gateway.baseUrl });

  it('lists, finds and prices configured engines beside the built-in ones; built-ins keep their defaults', () => {
    const engines = enginesWith([localEntry(), gatewayEntry()], { LOCAL_KEY, OPENROUTER_API_KEY: 'sk-or-v1-gateway-loopback-1b2c3d4e' });
    assert.deepEqual(engines.catalog.slice(0, CATALOG.length), [...CATALOG]);
    assert.deepEqual(
      engines.catalog.slice(CATALOG.length).map((s) => s.id),
      [LOCAL.id, GATEWAY.id],
    );
    assert.equal(engines.spec(GATEWAY.id).outputUsdPerMtok, 0.39);
    assert.equal(engines.find('local/nope'), undefined);
    for (const s of CATALOG) {
      assert.deepEqual([s.protocol, s.hedging, s.structuredOutput, s.concurrency], [s.family, true, true, undefined], s.id);
    }
  });

  it('a configured engine is available with its key variable set, or needing none; never on an organisation key', () => {
    const keyless = { ...gatewayEntry(), id: 'ollama/qwen3', api_key_env: undefined };
    const without = enginesWith([localEntry(), gatewayEntry(), keyless]);
    assert.equal(without.isAvailable(LOCAL.id), false);
    assert.equal(without.isAvailable(GATEWAY.id), false);
    assert.equal(without.isAvailable('ollama/qwen3'), true);
    const withKeys = enginesWith([localEntry(), gatewayEntry()], { LOCAL_KEY, OPENROUTER_API_KEY: 'sk-or-v1-gateway-loopback-1b2c3d4e' });
    assert.equal(withKeys.isAvailable(LOCAL.id), true);
    assert.equal(withKeys.isAvailable(GATEWAY.id), true);
    assert.equal(withKeys.isAvailable(LOCAL.id, { kind: 'api_key', apiKey: OPENAI_TEST_KEY, source: 'own_key' }), false);
  });

  it('calls each engine at its own base URL with its own key and model; a built-in one at the service base URL; priced from the file', async () => {
    const gatewayKey = 'sk-or-v1-gateway-loopback-1b2c3d4e';
    const engines = enginesWith([localEntry(), gatewayEntry()], { LOCAL_KEY, OPENROUTER_API_KEY: gatewayKey });
    const [a, b, c] = await Promise.all(
      [LOCAL.id, GATEWAY.id, 'openai/gpt-4.1'].map((engineId) => engines.call({ engineId, messages: MESSAGES, maxOutputTokens: 64 })),
    );
    assert.deepEqual([a?.text, b?.text, c?.text], ['local answer', 'gateway answer', 'openai answer']);
    assert.deepEqual(
      [local, gateway, openai].map((s) => s.requests.map((r) => [r.headers.authorization, (r.body as { model: string }).model])),
      [[[`Bearer ${LOCAL_KEY}`, LOCAL.model]], [[`Bearer ${gatewayKey}`, GATEWAY.model]], [[`Bearer ${OPENAI_TEST_KEY}`, 'gpt-4.1']]],
    );
    // 1000 in × $0.13/M + 333 out × $0.39/M = 130 + 129.87 → 260 micro-dollars (rounded up); the local seat is free.
    assert.equal(b?.costMicros, 260);
    assert.equal(b?.costMicros, engineCostMicros(1000, 333, { inputUsdPerMtok: 0.13, outputUsdPerMtok: 0.39 }));
    assert.equal(a?.costMicros, 0);
    assert.equal(redact(`key ${LOCAL_KEY} and ${gatewayKey}`), 'key [redacted] and [redacted]', 'the keys are registered as secrets');
  });

  it('without its key variable a configured engine is unavailable, naming the variable', async () => {
    const engines = enginesWith([localEntry(), gatewayEntry()]);
    const e = await engineFailure(engines.call({ engineId: GATEWAY.id, messages: MESSAGES, maxOutputTokens: 64 }));
    assert.equal(e.kind, 'unavailable');
    assert.match(e.message, /its key variable OPENROUTER_API_KEY is not set/);
  });

  it('holds calls past its concurrency until a slot frees, and a call whose deadline passes while waiting times out unsent', async () => {
    const engines = enginesWith([localEntry(), gatewayEntry()], { LOCAL_KEY });
    local.requests.length = 0;
    load.most = 0;
    const slow = [{ role: 'user' as const, content: 'Take your time. [[slow]]' }];
    const calls = [0, 1, 2].map(() => engines.call({ engineId: LOCAL.id, messages: slow, maxOutputTokens: 64 }));
    const late = engineFailure(engines.call({ engineId: LOCAL.id, messages: MESSAGES, maxOutputTokens: 64, timeoutMs: 50 }));
    const results = await Promise.all(calls);
    assert.deepEqual(
      results.map((r) => r.text),
      ['local answer', 'local answer', 'local answer'],
    );
    assert.equal(load.most, 1, 'never two at once on a one-slot server');
    const e = await late;
    assert.equal(e.kind, 'timeout');
    assert.match(e.message, /no free slot before the deadline \(at most 1 calls in flight\)/);
    assert.equal(local.requests.length, 3, 'the timed-out call never reached the server');
  });

  it('stops the start with the problems when the file is wrong', () => {
    assert.throws(
      () => enginesWith([{ ...localEntry(), backup: 'local/missing' }]),
      /^EnginesFileError: QUORUM_ENGINES_FILE engines\[0\] \(local\/smollm2\): backup: no engine "local\/missing"/,
    );
  });
});
