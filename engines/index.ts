// engines/: one adapter per provider wire protocol, the catalog, and the one call every engine request goes through.
/**
 * The engine layer: every seat, judge, synthesiser and classifier call goes through `Engines.call`.
 *
 *   createEngines(opts: EnginesOptions): Engines
 *
 *   interface EnginesOptions {
 *     config: EngineSettings;             // the entry point's Config: QUORUM_ENGINES_FILE (engines beside the catalog,
 *                                         // docs/engines.md), QUORUM_BEDROCK_ENDPOINT, QUORUM_STS_ENDPOINT,
 *                                         // QUORUM_SIM_LATENCY (zero | fixed:<ms> | spec[:<speedup>], default zero),
 *                                         // QUORUM_ENGINE_TIMEOUT_MS (each call's deadline, default 180 000),
 *                                         // QUORUM_SIM_SKILL (every sim engine equally good; unset: catalog skills)
 *     variable: EnvLookup;                // the variables read by name at start: QUORUM_{OPENAI,ANTHROPIC,GOOGLE}_{API_KEY,BASE_URL},
 *                                         // AWS_REGION + AWS credentials, the engines file's key variables
 *     simLatency?: SimLatency | string;   // overrides QUORUM_SIM_LATENCY
 *     logger?: Logger;                    // default createLogger('engines')
 *   }
 *
 *   interface Engines {
 *     roleRegion: string;                         // where an organisation's Bedrock role is assumed: AWS_REGION, else us-east-1
 *     catalog: readonly EngineSpec[];             // built-in, then QUORUM_ENGINES_FILE's
 *     spec(id): EngineSpec;                          // throws EngineError('unknown_model')
 *     find(id): EngineSpec | undefined;
 *     isAvailable(engineId, credential?): boolean;   // no credential: the service's own keys (sim: always)
 *     call(req: EngineRequest, credential?: Credential): Promise<EngineResult>;  // throws EngineError only
 *       // req.onText gets the answer's pieces as the provider writes them; req.continueFrom: a lost attempt's text, continued
 *   }
 *
 * A call with no credential runs on the service's keys; with one, on that credential (an
 * organisation's own key or Bedrock role). Failures are `EngineError`s: `retryable` ones belong to
 * the caller's retry policy, permanent ones to the seat's backup engine (`spec(id).backup`).
 */
import { parseSimLatency, type SimLatency } from '../domain/sim-latency';
import { engineCostMicros } from '../domain/pricing';
import type { Config, EnvLookup } from '../infra/config';
import { createLogger, type Logger } from '../infra/log';
import { BedrockAdapter, type BedrockTarget } from './adapters/bedrock';
import { callAnthropic } from './adapters/anthropic';
import type { AdapterCall, AdapterOutput, ApiKeyTarget } from './adapters/common';
import { callGoogle } from './adapters/google';
import { callOpenAi } from './adapters/openai';
import { callSim } from './adapters/sim';
import { CATALOG } from './catalog';
import { configuredKey, readEnginesFile, type ConfiguredEngine } from './configured';
import { DEFAULT_BASE_URLS, readServiceCredentials, RoleCredentialCache, type ApiKeyConfig, type ServiceCredentials } from './credentials';
import { EngineError } from './errors';
import { Slots } from './slots';
import type { Credential, EngineRequest, EngineResult, EngineSpec } from './types';

export * from './types';
export { CATALOG, enginesOf, findEngine } from './catalog';
export { isEngineError } from './errors';
export type { SimLatency } from '../domain/sim-latency';

/** What the engines take of the Config. */
export type EngineSettings = Pick<
  Config,
  | 'QUORUM_ENGINES_FILE'
  | 'QUORUM_SIM_LATENCY'
  | 'QUORUM_SIM_SKILL'
  | 'QUORUM_ENGINE_TIMEOUT_MS'
  | 'QUORUM_BEDROCK_ENDPOINT'
  | 'QUORUM_STS_ENDPOINT'
>;

export interface EnginesOptions {
  config: EngineSettings;
  /** The variables read by name, as the entry point found them at start: provider keys, AWS, the engines file's key variables. */
  variable: EnvLookup;
  simLatency?: SimLatency | string;
  logger?: Logger;
}

export interface Engines {
  /** The region an organisation's Bedrock role is assumed in: AWS_REGION, else us-east-1. */
  readonly roleRegion: string;
  readonly catalog: readonly EngineSpec[];
  spec(id: string): EngineSpec;
  find(id: string): EngineSpec | undefined;
  isAvailable(engineId: string, credential?: Credential): boolean;
  call(req: EngineRequest, credential?: Credential): Promise<EngineResult>;
}

export const DEFAULT_TIMEOUT_MS = 180_000;

type ApiKeyFamily = 'openai' | 'anthropic' | 'google';
const API_KEY_ADAPTERS: Readonly<Record<ApiKeyFamily, (call: AdapterCall, target: ApiKeyTarget) => Promise<AdapterOutput>>> = {
  openai: callOpenAi,
  anthropic: callAnthropic,
  google: callGoogle,
};

/** What every engine call shares, settled once at start from the options. */
interface EngineSetup {
  service: ServiceCredentials;
  simLatency: SimLatency;
  /**
   * QUORUM_SIM_SKILL (opt-in; unset, every engine keeps its catalog skill): every `sim` engine equally good. Its first
   * answer to a known-answer question is right with this probability whatever the engine and the difficulty, and a
   * wrong one is the question's one plausible wrong answer, the same for every engine (one mistake group). A revision
   * shown the right answer still recognises it more often (verifySkill). bench/calibration.ts sets 0.5, where a panel
   * without critique rounds is exactly as good as its baseline (docs/runs.md, "Calibration end to end").
   */
  simSkill: number | undefined;
  timeoutMs: number;
  log: Logger;
  bedrock: BedrockAdapter;
  roles: RoleCredentialCache;
  /** QUORUM_ENGINES_FILE's engines, each with its key as read at start. */
  configured: ReadonlyMap<string, ConfiguredEngine & { key: ApiKeyConfig | undefined }>;
  catalog: readonly EngineSpec[];
  find(id: string): EngineSpec | undefined;
  slots: ReadonlyMap<string, Slots>;
}

export function createEngines(opts: EnginesOptions): Engines {
  const setup = engineSetup(opts);
  const spec = (id: string): EngineSpec => {
    const found = setup.find(id);
    if (!found) throw new EngineError('unknown_model', `no engine "${id}" in the catalog`, { engineId: id });
    return found;
  };
  return {
    roleRegion: opts.variable('AWS_REGION') ?? 'us-east-1',
    catalog: setup.catalog,
    spec,
    find: setup.find,
    isAvailable: (engineId, credential) => isAvailable(setup, engineId, credential),
    // async: an unknown engine is a rejected call, like every other EngineError.
    call: async (req, credential) => callEngine(setup, spec(req.engineId), req, credential),
  };
}

function engineSetup(opts: EnginesOptions): EngineSetup {
  const { config, variable } = opts;
  const service = readServiceCredentials(config, variable);
  // QUORUM_ENGINES_FILE's engines beside the built-in ones, each with its own endpoint and key (docs/engines.md).
  const configured = new Map(
    readEnginesFile(config.QUORUM_ENGINES_FILE, new Map(CATALOG.map((s) => [s.id, s]))).map((c) => [
      c.spec.id,
      { ...c, key: configuredKey(c, variable) },
    ]),
  );
  const catalog: readonly EngineSpec[] = Object.freeze([...CATALOG, ...[...configured.values()].map((c) => c.spec)]);
  const byId: ReadonlyMap<string, EngineSpec> = new Map(catalog.map((s) => [s.id, s]));
  return {
    service,
    simLatency:
      typeof opts.simLatency === 'object' ? opts.simLatency : parseSimLatency(opts.simLatency ?? config.QUORUM_SIM_LATENCY ?? 'zero'),
    simSkill: config.QUORUM_SIM_SKILL,
    // A deployment may give up on a silent provider sooner (the schema allows no later: an engine call's activity
    // allows 200 s a try, workflows/engine-call-policy.ts).
    timeoutMs: config.QUORUM_ENGINE_TIMEOUT_MS ?? DEFAULT_TIMEOUT_MS,
    log: opts.logger ?? createLogger('engines'),
    bedrock: new BedrockAdapter(),
    roles: new RoleCredentialCache({ credentials: service.bedrock?.credentials, stsEndpoint: service.stsEndpoint }),
    configured,
    catalog,
    find: (id) => byId.get(id),
    slots: new Map(catalog.flatMap((s) => (s.concurrency ? [[s.id, new Slots(s.concurrency)] as const] : []))),
  };
}

function isAvailable(setup: EngineSetup, engineId: string, credential?: Credential): boolean {
  const { find, configured, service } = setup;
  const s = find(engineId);
  if (!s) return false;
  const own = configured.get(s.id);
  if (own) return credential === undefined && (s.protocol === 'bedrock' ? service.bedrock !== undefined : own.key !== undefined);
  if (s.protocol === 'sim') return true;
  if (s.protocol === 'bedrock') {
    if (credential?.kind === 'bedrock_role') return service.bedrock !== undefined; // the service's identity assumes the role
    return credential === undefined || credential.kind === 'bedrock_service' ? service.bedrock !== undefined : false;
  }
  if (credential) return credential.kind === 'api_key';
  return service[s.protocol] !== undefined;
}

/** The adapter call for engine `s` on `credential` (none: the service's own keys), or why it cannot be made. */
async function dispatch(
  setup: EngineSetup,
  s: EngineSpec,
  req: EngineRequest,
  call: AdapterCall,
  credential: Credential | undefined,
): Promise<AdapterOutput> {
  const { simLatency, simSkill, configured, service, roles, bedrock } = setup;
  const unavailable = (why: string): EngineError => new EngineError('unavailable', `${s.id}: ${why}`, { engineId: s.id });
  if (s.protocol === 'sim') return callSim(call, req.knownAnswer, simLatency, req.attempt, simSkill);
  const own = configured.get(s.id);
  // A configured engine is called at its own endpoint with its own key: no organisation's key is ever sent there.
  if (own && credential) throw unavailable('a configured engine runs on its own key only');
  if (s.protocol === 'bedrock') {
    if (!service.bedrock) throw unavailable('Bedrock is not configured for this service (AWS_REGION and AWS credentials)');
    let target: BedrockTarget;
    if (credential?.kind === 'bedrock_role') {
      const creds = await roles.get(credential, { engineId: s.id, deadline: call.deadline, signal: call.signal });
      target = {
        region: credential.region,
        credentials: creds,
        endpoint: service.bedrockEndpoint,
        identity: `role:${credential.roleArn}\n${credential.externalId}`,
      };
    } else if (credential === undefined || credential.kind === 'bedrock_service') {
      target = {
        region: credential?.region ?? service.bedrock.region,
        credentials: service.bedrock.credentials,
        endpoint: own?.baseUrl ?? service.bedrockEndpoint,
        identity: 'service',
      };
    } else {
      throw unavailable('an API key cannot call Bedrock; it needs a role');
    }
    return bedrock.call(call, target);
  }
  const family = s.protocol;
  let key: ApiKeyConfig | undefined;
  if (own) key = own.key;
  else if (credential === undefined) key = service[family];
  else if (credential.kind === 'api_key')
    key = { apiKey: credential.apiKey, baseUrl: credential.baseUrl ?? service[family]?.baseUrl ?? DEFAULT_BASE_URLS[family] };
  else throw unavailable(`a ${credential.kind} credential cannot call ${family}`);
  if (!key)
    throw unavailable(
      own ? `its key variable ${own.apiKeyEnv} is not set` : `no ${family} key is configured (QUORUM_${family.toUpperCase()}_API_KEY)`,
    );
  return API_KEY_ADAPTERS[family](call, { key });
}

/** Past its engine's concurrency a call waits for a slot, within its own deadline (the wait is part of the call). */
async function withSlot<T>(
  slots: ReadonlyMap<string, Slots>,
  s: EngineSpec,
  deadline: AbortSignal,
  signal: AbortSignal | undefined,
  run: () => Promise<T>,
): Promise<T> {
  const slot = slots.get(s.id);
  if (!slot) return run();
  const release = await slot.acquire(signal ? AbortSignal.any([deadline, signal]) : deadline).catch(() => {
    throw signal?.aborted
      ? new EngineError('aborted', `${s.id}: request cancelled by the caller`, { engineId: s.id })
      : new EngineError('timeout', `${s.id}: no free slot before the deadline (at most ${slot.limit} calls in flight)`, {
          engineId: s.id,
        });
  });
  try {
    return await run();
  } finally {
    release();
  }
}

async function callEngine(setup: EngineSetup, s: EngineSpec, req: EngineRequest, credential?: Credential): Promise<EngineResult> {
  const { timeoutMs, log } = setup;
  const started = performance.now();
  if (!Number.isInteger(req.maxOutputTokens) || req.maxOutputTokens < 1) {
    throw new EngineError('bad_request', `${s.id}: maxOutputTokens must be a positive integer`, { engineId: s.id });
  }
  const deadline = AbortSignal.timeout(req.timeoutMs ?? timeoutMs);
  // Bedrock's replies are not streamed: its text is handed on whole once it has come.
  const streamed = s.protocol !== 'bedrock';
  const adapterCall: AdapterCall = {
    spec: s,
    messages: req.messages,
    // The provider would refuse more than its limit; asking for the limit is the closest honest request.
    maxOutputTokens: Math.min(req.maxOutputTokens, s.maxOutputTokens),
    temperature: req.temperature,
    seed: req.seed,
    topP: req.topP,
    stop: req.stop,
    reply: s.structuredOutput ? req.reply : undefined,
    deadline,
    signal: req.signal,
    onText: streamed ? req.onText : undefined,
    continueFrom: req.continueFrom,
  };
  try {
    const out = await withSlot(setup.slots, s, deadline, req.signal, () => dispatch(setup, s, req, adapterCall, credential));
    // A continued answer may have nothing left to say: only a reply that began it must hold text.
    if (out.text.length === 0 && out.finish === 'stop' && !req.continueFrom) {
      throw new EngineError('malformed', `${s.id}: provider answered with no text`, { engineId: s.id });
    }
    if (!streamed && out.text !== '') req.onText?.(out.text);
    const result: EngineResult = {
      ...out,
      latencyMs: Math.round(performance.now() - started),
      costMicros: engineCostMicros(out.tokensIn, out.tokensOut, s),
      source: s.protocol === 'sim' ? 'service' : (credential?.source ?? 'service'),
      engineId: s.id,
      // Billed as served; a server that ignores the limit is reported, never silently believed.
      overLimit: out.tokensOut > adapterCall.maxOutputTokens,
    };
    if (result.overLimit)
      log.warn('engine reply longer than its output limit', {
        engine: s.id,
        limit: adapterCall.maxOutputTokens,
        tokensOut: out.tokensOut,
      });
    log.debug('engine call', {
      engine: s.id,
      finish: result.finish,
      tokensIn: result.tokensIn,
      tokensOut: result.tokensOut,
      latencyMs: result.latencyMs,
      costMicros: result.costMicros,
      source: result.source,
    });
    return result;
  } catch (err) {
    const e =
      err instanceof EngineError
        ? err
        : new EngineError('malformed', `${s.id}: unexpected failure: ${err instanceof Error ? err.message : String(err)}`, {
            engineId: s.id,
            secrets: secretsOf(credential),
          });
    log.warn('engine call failed', {
      engine: s.id,
      kind: e.kind,
      retryable: e.retryable,
      status: e.status,
      retryAfterMs: e.retryAfterMs,
      error: e.message,
    });
    throw e;
  }
}

function secretsOf(credential: Credential | undefined): string[] {
  return credential?.kind === 'api_key' ? [credential.apiKey] : [];
}
