import type { Knex } from 'knex';
import { keyBudgetExceeded, type KeyKind } from '../domain/api-keys';
import { isBillingRefusal, type BillingRefusal } from '../domain/billing';
import type { Classification, Lane } from '../domain/classifier';
import { QuorumError, type ErrorCode } from '../domain/errors';
import type { Judgment } from '../domain/judge';
import { answerFormatProblem } from '../domain/answer-format-check';
import type { AnswerFormat } from '../domain/answer-options';
import { parseJudgment } from '../domain/judge-reply';
import { judgmentSchema } from '../domain/reply-schemas';
import type { ChatMessage } from '../domain/messages';
import { modeConfigHash, type ResolvedMode, type Tier } from '../domain/modes';
import type { ClassifierCall, Settlement } from '../domain/outcome';
import { seatingFor, type Seating } from '../domain/seat-assignment';
import { raiseKeyBudgetReached } from '../db/repositories/api-keys';
import * as ledger from '../db/repositories/ledger';
import { holdPlanCharge } from '../db/repositories/plans';
import { ownProviderFamilies } from '../db/repositories/provider-credentials';
import { settleOutcome } from '../db/repositories/receipts';
import { readAnswerChunks } from '../db/repositories/deliberation-events';
import { abandonRequest } from '../db/repositories/requests';
import { unknownOrgAsNotFound } from '../db/repositories/shared';
import { classifyPrompt } from '../engines/classify';
import { callSeatingContext } from '../engines/seating-context';
import type { AnswerStream } from './answer-stream';
import type { ActivityDeps } from './deps';
import { createEngineCall, type EngineCallInput, type EngineCallResult } from './engine-call';
import { searchGrounding, type GroundingResult } from './grounding';
import { createQuorumActivities } from './quorum';

export type { EngineCallInput, EngineCallResult };
export type { LateCallInput } from './engine-call';

/** The classify step's result: the classification, and the classifier model's call when one answered. */
export type ClassifyResult = Classification & { classifierCall?: ClassifierCall };

export interface JudgeCallInput extends EngineCallInput {
  /** The anonymous labels the judge was shown; a verdict naming others is not usable. */
  labels: string[];
}

export interface JudgeCallResult extends EngineCallResult {
  /** The judge's verdict, or null when its reply is not the JSON asked for. */
  judgment: Judgment | null;
}

/** A call `prepare` refuses to run: the code the workflow ends it with (nothing held, nothing run), and why. */
export interface PrepareRefusal {
  refused:
    Extract<ErrorCode, 'insufficient_balance' | 'plan_limit_reached' | 'key_budget_exceeded' | 'mode_resolution_mismatch'> | BillingRefusal;
  message: string;
}

/** A live key's monthly budget, in micro-dollars as a decimal string (exact however large). */
export interface KeyBudget {
  keyId: string;
  monthlyMicros: string;
}

/** A hold's refusal as the call's code; any other (an organisation or person unknown) ends it as a hold not covered. */
function holdRefusal(code: ErrorCode): PrepareRefusal['refused'] {
  return code === 'plan_limit_reached' || code === 'key_budget_exceeded' || code === 'mode_resolution_mismatch' || isBillingRefusal(code)
    ? code
    : 'insufficient_balance';
}

/** What `prepare` holds: the call's ceiling on the balance (within its key's budget, if any), or on a person's plan. */
export interface PrepareHold {
  amountMicros: number;
  personId?: string;
  keyBudget?: KeyBudget;
}

/**
 * The call's hold, and beside it, at once, the organisation's own-key settings when `readsOwnKeys` (the families the
 * seating may use). A refusal throws its QuorumError.
 */
async function holdThenRead(
  db: Knex,
  call: { orgId: string; requestId: string; hold?: PrepareHold; readsOwnKeys: boolean },
): Promise<Set<string>> {
  const { orgId, requestId, hold } = call;
  const families = (): Promise<Set<string>> => (call.readsOwnKeys ? ownProviderFamilies(db, orgId) : Promise.resolve(new Set()));
  if (!hold) return families();
  const amountMicros = BigInt(hold.amountMicros);
  if (hold.personId) {
    await holdPlanCharge(db, { orgId, requestId, personId: hold.personId, amountMicros });
    return new Set();
  }
  if (hold.keyBudget) {
    const { keyId, monthlyMicros } = hold.keyBudget;
    const [judged, read] = await Promise.all([
      ledger.holdWithinKeyBudget(db, { orgId, requestId, amountMicros, keyId, budgetMicros: BigInt(monthlyMicros) }),
      families(),
    ]);
    if (judged.held) return read;
    await raiseKeyBudgetReached(db, { orgId, keyId, figures: judged.figures });
    throw keyBudgetExceeded(judged.figures, amountMicros);
  }
  // The hold in one statement; a refused hold is tried once more the long way, which names the refusal (or holds, if
  // money was freed meanwhile).
  const [held, read] = await Promise.all([ledger.holdAtOnce(db, { orgId, requestId, amountMicros }), families()]);
  if (held === 'refused')
    await unknownOrgAsNotFound(orgId, () => db.transaction((trx) => ledger.reserveIn(trx, { orgId, requestId, amountMicros })));
  return read;
}

export function createDeliberationActivities(deps: ActivityDeps) {
  const { db, engines, config } = deps;
  const engineCall = createEngineCall(deps);

  return {
    /**
     * Before anything runs, in one step (one local activity; the hold one statement): the call's hold, then which
     * engine sits where. The hold is the call's ceiling on the prepaid balance (402 when it cannot be covered, or when
     * a billing state refuses it); with `keyBudget`, also 402 `key_budget_exceeded` past the live key's monthly
     * budget, judged under the key's lock so calls at once cannot all pass it; with `personId`, a call on that
     * person's plan holds on the plan instead (402 `plan_limit_reached`); a test key holds nothing. The plan reads the organisation's own-key settings (never their
     * secrets). A refusal is an answer, not a failure: the workflow ends the call with its code. `lane` also labels the
     * worker's metrics.
     */
    async prepare(input: {
      orgId: string;
      requestId: string;
      /** The key's kind; named `keyMode` in recorded histories, so it keeps that name. */
      keyMode: KeyKind;
      mode: ResolvedMode;
      tier: Tier;
      lane: Lane;
      hold?: PrepareHold;
      /** A call on a plan runs on the service's keys: the plan pays the service, never the organisation's provider account. */
      onPlan?: boolean;
    }): Promise<Seating | PrepareRefusal> {
      const { orgId, requestId, mode, hold } = input;
      // The receipt names this hash: run nothing unless the configuration about to run is the one it names.
      // (The API read both from the same stored version; a difference means that version's data is not what it says.)
      if (modeConfigHash(mode.config) !== mode.configHash) {
        return {
          refused: 'mode_resolution_mismatch',
          message: `The configuration handed to the deliberation does not hash to version ${mode.version} of ${mode.id}; nothing was run or billed.`,
        };
      }
      const simOnly = input.keyMode === 'test';
      const readsOwnKeys = !simOnly && !input.onPlan;
      let ownFamilies: Set<string>;
      try {
        ownFamilies = await holdThenRead(db, { orgId, requestId, hold, readsOwnKeys });
      } catch (err) {
        if (err instanceof QuorumError) return { refused: holdRefusal(err.code), message: err.message };
        throw err;
      }
      return seatingFor(mode.config, input.tier, input.lane, callSeatingContext(engines, { ownFamilies, simOnly }, config));
    },

    /**
     * Difficulty, depth, lane and the rest. With a classifier engine configured (and reachable) it asks that small
     * model and falls back to the heuristic on any failure; `classifiedBy` says which ran. The model's call, when it
     * answered, rides beside the classification (`classifierCall`: recorded results of earlier workers have none).
     */
    async classify(input: { messages: ChatMessage[]; engineId?: string }): Promise<ClassifyResult> {
      const { classification, call } = await classifyPrompt(engines, deps.log, input.messages, input.engineId);
      return call ? { ...classification, classifierCall: call } : classification;
    },

    async ground(input: { query: string }): Promise<GroundingResult> {
      return searchGrounding(db, input.query, config.QUORUM_SEARXNG_URL);
    },

    seat: engineCall,
    async judge(input: JudgeCallInput): Promise<JudgeCallResult> {
      const r = await engineCall({ ...input, reply: judgmentSchema(input.labels) });
      return { ...r, judgment: parseJudgment(r.text, input.labels) ?? null };
    },
    synthesize: engineCall,
    /** Issue 52: reads the seats' answers out of their texts when none states one readably (domain/aggregation.ts). */
    ballot: engineCall,
    ...createQuorumActivities(engines),

    /**
     * Whether the answer meets the caller's `response_format` (issue 40): why not, or null. A local activity, not
     * workflow code: the validator compiles schemas with `new Function` (domain/answer-format-check.ts).
     */
    async checkAnswer(input: { text: string; format: AnswerFormat }): Promise<string | null> {
      return answerFormatProblem(input.text, input.format) ?? null;
    },

    /** The text an answer's stream holds at its step (its pieces joined): what a call that failed for good had sent. */
    async streamedAnswer(at: AnswerStream): Promise<string> {
      return (await readAnswerChunks(db, at.requestId, at.step)).map((c) => c.text).join('');
    },

    /** A deliberation that ends without an answer: nothing billed, the hold released, the request marked failed. */
    async failRequest(input: { orgId: string; requestId: string; code: string; unsettled?: Settlement }): Promise<void> {
      await abandonRequest(db, input);
    },

    /** The outcome recorded and billed once (see settleOutcome); a test key's call bills nothing. */
    async settle(input: Settlement): Promise<void> {
      try {
        await settleOutcome(db, input);
      } catch (err) {
        if (err instanceof QuorumError)
          deps.log.error('settle: the outcome cannot be recorded', { requestId: input.outcome.requestId, err });
        throw err;
      }
    },
  };
}

export type DeliberationActivities = ReturnType<typeof createDeliberationActivities>;
