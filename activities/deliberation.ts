import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Knex } from 'knex';
import { classifyFromModel, classifyHeuristic, parseModelJudgment, type Classification } from '../domain/classifier';
import type { ChatMessage } from '../domain/messages';
import { QuorumError } from '../domain/errors';
import { modeConfigHash, type ModeConfig, type Tier, type ResolvedMode } from '../domain/modes';
import type { CallSource, Outcome, SeatRole } from '../domain/outcome';
import type { Judgment } from '../domain/judge';
import { parseJudgment } from '../domain/judge-reply';
import { classifierPrompt } from '../domain/prompts';
import { getProviderCredential, type ProviderFamily } from '../db/repositories/provider-credentials';
import * as ledger from '../db/repositories/ledger';
import type { Credential, Engines, EngineSpec, Family } from '../engines';
import { isEngineError } from '../engines';
import type { Logger } from '../infra/log';
import { searchGrounding, type GroundingResult } from './grounding';

export interface DeliberationDeps {
  db: Knex;
  engines: Engines;
  log: Logger;
  env?: NodeJS.ProcessEnv;
}

/** An engine as the workflow needs it: its id and prices (workflows do not import the catalog). */
export interface PlannedEngine {
  engineId: string;
  inputUsdPerMtok: number;
  outputUsdPerMtok: number;
  /** Run on the organisation's own provider account (seat calls only). */
  ownKey: boolean;
}

export interface SeatPlan {
  role: SeatRole;
  /** What the mode meant to seat here. */
  designed: string;
  /** The designed engine if it can run, then its backups; the seat takes the first that answers. */
  chain: PlannedEngine[];
}

export interface Plan {
  seats: SeatPlan[];
  judge: { designed: string; chain: PlannedEngine[] };
  synthesis: { designed: string; chain: PlannedEngine[] };
  /** Why an engine of the mode's design is not in a chain, for the receipt. */
  notes: string[];
}

export interface EngineCallInput {
  orgId: string;
  engineId: string;
  ownKey: boolean;
  messages: ChatMessage[];
  maxOutputTokens: number;
}

export interface EngineCallResult {
  engineId: string;
  text: string;
  finish: 'stop' | 'length';
  tokensIn: number;
  tokensOut: number;
  reasoningTokens: number | null;
  latencyMs: number;
  costMicros: number;
  source: CallSource;
  startedAt: string;
  endedAt: string;
}

export interface JudgeCallInput extends EngineCallInput {
  /** The anonymous labels the judge was shown; a verdict naming others is not usable. */
  labels: string[];
}

export interface JudgeCallResult extends EngineCallResult {
  /** The judge's verdict, or null when its reply is not the JSON asked for. */
  judgment: Judgment | null;
}

const HEARTBEAT_EVERY_MS = 2_000;
/** The classifier is a small, fast model: past this the heuristic answers instead. */
const CLASSIFIER_TIMEOUT_MS = 8_000;

/** The failure type the workflow reads as "this engine cannot answer: move to the backup". */
export const ENGINE_PERMANENT = 'EnginePermanent';

const ROLES: readonly SeatRole[] = ['seat1', 'seat2', 'seat3'];
const SIM_NAMES = ['alpha', 'beta', 'gamma'] as const;
/** How far a seat's chain follows backups: the designed engine and two more. */
const CHAIN_LENGTH = 3;

function seatsFor(config: ModeConfig, tier: Tier): string[] {
  if (config.express === 'always') return config.tiers.experience.seats;
  return config.tiers[tier]?.seats ?? config.tiers.plus?.seats ?? config.tiers.experience.seats;
}

/**
 * Failures a retry cannot cure: Postgres data exceptions (SQLSTATE class 22) and integrity violations (23).
 * Anything else (a connection refused, a deadlock, a timeout) is retried until the database is back.
 */
function isDeterministicDbError(err: unknown): boolean {
  const code = err instanceof Error && 'code' in err ? err.code : undefined;
  return typeof code === 'string' && /^2[23]/.test(code);
}

/** Every amount the settlement writes must be a whole, non-negative number of micro-dollars. */
function unreadableAmounts(o: Outcome): string[] {
  const amounts: Record<string, number> = {
    gateway: o.money.gatewayMicros,
    platform_fee: o.money.platformFeeMicros,
    mode_fee: o.money.modeFeeMicros,
    cap_credit: o.money.capCreditMicros,
    billed: o.money.billedMicros,
    ...Object.fromEntries(o.seatRows.flatMap((r) => [[`${r.role}_r${r.round}_cost`, r.realCostMicros], [`${r.role}_r${r.round}_fee`, r.feeMicros]])),
  };
  return Object.entries(amounts).filter(([, v]) => !Number.isSafeInteger(v) || v < 0).map(([k, v]) => `${k}=${v}`);
}

function keyedFamily(family: Family): ProviderFamily | undefined {
  return family === 'sim' ? undefined : family;
}

export function createDeliberationActivities(deps: DeliberationDeps) {
  const { db, engines } = deps;
  const env = deps.env ?? process.env;

  const planned = (spec: EngineSpec, ownKey: boolean): PlannedEngine => ({
    engineId: spec.id,
    inputUsdPerMtok: spec.inputUsdPerMtok,
    outputUsdPerMtok: spec.outputUsdPerMtok,
    ownKey,
  });

  /** The engine, then its backups, keeping those that can run: on the org's own key when it has one, else the service's. */
  const chainOf = (designed: string, ownFamilies: ReadonlySet<string>, simStandIn: string, notes: string[]): PlannedEngine[] => {
    const chain: PlannedEngine[] = [];
    const seen = new Set<string>();
    let id: string | undefined = designed;
    while (id && !seen.has(id) && seen.size < CHAIN_LENGTH) {
      seen.add(id);
      const spec = engines.find(id);
      if (!spec) {
        notes.push(`${id}: not in the engine catalog`);
        break;
      }
      const own = ownFamilies.has(spec.family);
      if (own || engines.isAvailable(spec.id)) chain.push(planned(spec, own));
      else notes.push(`${spec.id}: no ${spec.family} credentials configured`);
      id = spec.backup;
    }
    if (chain.length > 0) return chain;
    // Nothing of the design can run here (no provider keys): the tier's simulated engines stand in, labelled sim/.
    const sim = engines.spec(simStandIn);
    return [planned(sim, false), planned(engines.spec(sim.backup), false)];
  };

  /**
   * One provider call. Retryable failures are thrown for Temporal's retry policy (honouring the provider's
   * retry-after); permanent ones are non-retryable `EnginePermanent` failures the workflow answers with a backup.
   * Registered as `seat`, `judge` (which also reads the verdict) and `synthesize` so each step is named in the workflow's history.
   */
  const engineCall = async (input: EngineCallInput): Promise<EngineCallResult> => {
    let credential: Credential | undefined;
    if (input.ownKey) {
      const family = keyedFamily(engines.spec(input.engineId).family);
      const stored = family ? await getProviderCredential(db, input.orgId, family) : undefined;
      if (!stored) throw ApplicationFailure.nonRetryable(`${input.engineId}: the organisation's own key was removed`, ENGINE_PERMANENT);
      // Decrypted here and only here; it never enters workflow history.
      credential =
        stored.kind === 'api_key'
          ? { kind: 'api_key', apiKey: stored.apiKey, source: 'own_key' }
          : { kind: 'bedrock_role', roleArn: stored.roleArn, externalId: stored.externalId, region: env.AWS_REGION ?? 'us-east-1', source: 'own_key' };
    }
    const startedAt = new Date().toISOString();
    // Heartbeats let Temporal notice within seconds that a worker died mid-call, instead of at the 200 s timeout.
    const heartbeat = setInterval(() => Context.current().heartbeat(), HEARTBEAT_EVERY_MS);
    try {
      const r = await engines.call(
        { engineId: input.engineId, messages: input.messages, maxOutputTokens: input.maxOutputTokens, signal: Context.current().cancellationSignal },
        credential,
      );
      return {
        engineId: r.engineId,
        text: r.text,
        finish: r.finish,
        tokensIn: r.tokensIn,
        tokensOut: r.tokensOut,
        reasoningTokens: r.reasoningTokens,
        latencyMs: r.latencyMs,
        costMicros: r.costMicros,
        source: r.source,
        startedAt,
        endedAt: new Date().toISOString(),
      };
    } catch (err) {
      if (!isEngineError(err)) throw err;
      if (!err.retryable) throw ApplicationFailure.nonRetryable(err.message, ENGINE_PERMANENT, err.kind);
      throw ApplicationFailure.create({ message: err.message, type: `Engine_${err.kind}`, nextRetryDelay: err.retryAfterMs, details: [err.kind] });
    } finally {
      clearInterval(heartbeat);
    }
  };

  return {
    /** Which engine sits where for this call; reads the organisation's own-key settings (never their secrets). */
    async plan(input: { orgId: string; keyMode: 'live' | 'test'; mode: ResolvedMode; tier: Tier }): Promise<Plan> {
      const { mode } = input;
      // The receipt names this hash: run nothing unless the configuration about to run is the one it names.
      // (The API read both from the same stored version; a difference means that version's data is not what it says.)
      if (modeConfigHash(mode.config) !== mode.configHash) {
        throw new QuorumError('mode_resolution_mismatch', `The configuration handed to the deliberation does not hash to version ${mode.version} of ${mode.id}; nothing was run or billed.`);
      }
      const config = mode.config;
      const notes: string[] = [];
      const ownFamilies = new Set<string>();
      // Test keys run every seat on sim engines and never touch a provider account.
      const simOnly = input.keyMode === 'test';
      if (!simOnly) {
        const rows = (await db('provider_credentials').where({ org_id: input.orgId }).select('family')) as { family: string }[];
        for (const r of rows) ownFamilies.add(r.family);
      }
      const seatTier: Tier = config.express === 'always' ? 'experience' : input.tier;
      const seats = seatsFor(config, input.tier).map((designed, i): SeatPlan => {
        const simStandIn = `sim/${SIM_NAMES[i % SIM_NAMES.length]}-${seatTier}`;
        return { role: ROLES[i], designed, chain: simOnly ? chainOf(simStandIn, new Set(), simStandIn, []) : chainOf(designed, ownFamilies, simStandIn, notes) };
      });
      // Judge and synthesis always run on the service's keys.
      const staff = (designed: string, backup: string | undefined, simStandIn: string): { designed: string; chain: PlannedEngine[] } => {
        if (simOnly) return { designed, chain: chainOf(simStandIn, new Set(), simStandIn, []) };
        const chain = chainOf(designed, new Set(), simStandIn, notes);
        const extra = backup ? engines.find(backup) : undefined;
        if (extra && engines.isAvailable(extra.id) && !chain.some((c) => c.engineId === extra.id)) chain.splice(1, 0, planned(extra, false));
        return { designed, chain };
      };
      return {
        seats,
        judge: staff(config.staff.judge.engine, config.staff.judge.backup, 'sim/alpha-plus'),
        synthesis: staff(config.staff.synthesis.engine, config.staff.synthesis.backup, 'sim/beta-plus'),
        notes,
      };
    },

    /**
     * Difficulty, depth, lane and the rest. With a classifier engine configured (and reachable) it asks that small
     * model and falls back to the heuristic on any failure; `classifiedBy` says which ran.
     */
    async classify(input: { messages: ChatMessage[]; engineId?: string }): Promise<Classification> {
      if (!input.engineId || !engines.isAvailable(input.engineId)) return classifyHeuristic(input.messages);
      try {
        const r = await engines.call({ engineId: input.engineId, messages: classifierPrompt(input.messages), maxOutputTokens: 200, timeoutMs: CLASSIFIER_TIMEOUT_MS });
        const judgment = parseModelJudgment(r.text);
        if (judgment) return classifyFromModel(input.messages, judgment);
        deps.log.warn('classifier model gave no usable answer; heuristic used', { engineId: input.engineId });
      } catch (err) {
        deps.log.warn('classifier model failed; heuristic used', { engineId: input.engineId, err });
      }
      return classifyHeuristic(input.messages);
    },

    async ground(input: { query: string }): Promise<GroundingResult> {
      return searchGrounding(db, input.query, env.QUORUM_SEARXNG_URL);
    },

    seat: engineCall,
    async judge(input: JudgeCallInput): Promise<JudgeCallResult> {
      const r = await engineCall(input);
      return { ...r, judgment: parseJudgment(r.text, input.labels) ?? null };
    },
    synthesize: engineCall,

    /** Holds the call's ceiling on the prepaid balance before anything runs (402 when it cannot be covered). */
    async reserve(input: { orgId: string; requestId: string; amountMicros: number }): Promise<void> {
      await ledger.reserve(db, { orgId: input.orgId, requestId: input.requestId, amountMicros: BigInt(input.amountMicros) });
    },

    /** A run that ends without an answer: nothing billed, the hold released, the request marked failed. */
    async fail(input: { orgId: string; requestId: string; code: string }): Promise<void> {
      await db.transaction(async (trx) => {
        await ledger.release(trx, { orgId: input.orgId, requestId: input.requestId });
        await trx('requests').where({ id: input.requestId }).update({ state: 'failed', error_code: input.code, completed_at: trx.fn.now() });
      });
    },

    /**
     * Charge, receipt, seat rows and the request's final state in one transaction; idempotent by request id,
     * so a retried settle never charges twice.
     */
    async settle(input: { outcome: Outcome; form: 'A' | 'B'; keyMode: 'live' | 'test'; modeVersion: number }): Promise<void> {
      const o = input.outcome;
      const unreadable = unreadableAmounts(o);
      if (unreadable.length > 0) throw new QuorumError('cost_unreadable', `The call's cost cannot be read (${unreadable.join(', ')}); nothing was billed.`);
      await db.transaction(async (trx) => {
        const done = await trx('receipts').where({ request_id: o.requestId }).first('request_id');
        if (done) return;
        if (input.keyMode === 'live') {
          const gross = o.money.gatewayMicros + o.money.platformFeeMicros + o.money.modeFeeMicros;
          // Form B charges in full and credits back the excess; Form A's charge is held at the ceiling.
          const charge = input.form === 'B' ? gross : o.money.billedMicros;
          await ledger.settle(trx, { orgId: o.orgId, requestId: o.requestId, chargeMicros: BigInt(charge), capCreditMicros: BigInt(o.money.capCreditMicros) });
        }
        await trx('receipts').insert({
          request_id: o.requestId,
          org_id: o.orgId,
          mode_id: o.modeId,
          mode_version: input.modeVersion,
          config_hash: o.configHash,
          status: o.status,
          lane: o.lane,
          tier: o.tier,
          gateway_micros: o.money.gatewayMicros,
          platform_fee_micros: o.money.platformFeeMicros,
          mode_fee_micros: o.money.modeFeeMicros,
          cap_credit_micros: o.money.capCreditMicros,
          billed_micros: o.money.billedMicros,
          prompt_tokens: o.usage.promptTokens,
          completion_tokens: o.usage.completionTokens,
          latency_ms: o.latencyMs,
          outcome: JSON.stringify(o),
          created_at: o.createdAt,
          completed_at: o.completedAt,
        });
        if (o.seatRows.length > 0) {
          await trx('receipt_seats').insert(
            o.seatRows.map((s) => ({
              request_id: o.requestId,
              role: s.role,
              round_number: s.round,
              model_used: s.modelUsed,
              original_model: s.originalModel,
              fallback_used: s.fallbackUsed,
              tokens_in: s.tokensIn,
              tokens_out: s.tokensOut,
              started_at: s.startedAt,
              ended_at: s.endedAt,
              latency_ms: s.latencyMs,
              judge_score: s.judgeScore,
              is_best_seat: s.isBest,
              source: s.source,
              real_cost_micros: s.realCostMicros,
              fee_rate_ppm: s.feeRatePpm,
              fee_micros: s.feeMicros,
              content: s.content,
            })),
          );
        }
        await trx('requests')
          .where({ id: o.requestId })
          .update({
            state: o.status === 'capped' && input.form === 'B' ? 'capped' : 'succeeded',
            finish_reason: o.finishReason,
            answer_truncated: o.finishReason === 'length',
            seats_answered: o.seatsAnswered,
            completed_at: o.completedAt,
          });
      }).catch((err: unknown) => {
        if (!isDeterministicDbError(err)) throw err;
        deps.log.error('settle: the database refused the outcome', { requestId: o.requestId, err });
        throw new QuorumError('cost_unreadable', 'The deliberation could not be recorded; nothing was billed. Retry with the same Idempotency-Key.');
      });
    },
  };
}

export type DeliberationActivities = ReturnType<typeof createDeliberationActivities>;
