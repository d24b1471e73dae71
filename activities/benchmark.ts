import { ApplicationFailure } from '@temporalio/activity';
import type { KeyKind } from '../domain/api-keys';
import { isBillingRefusal } from '../domain/billing';
import { QuorumError } from '../domain/errors';
import type { RunAdmission } from '../domain/run-admission';
import type { ResolvedMode, Tier } from '../domain/modes';
import type { Question } from '../domain/questions/types';
import { lineUpRun, type TierLineup } from '../domain/run-lineup';
import { endStateOf, summarizeRun, type RunSummary } from '../domain/run-summary';
import { dealTiers, ENDED_STATES, type BucketCounts, type QuestionResult, type RunKind, type RunSpec } from '../domain/runs';
import { countMessagesTokens } from '../domain/tokens';
import { certificationAttemptNumber } from '../db/repositories/certifications';
import { ownProviderFamilies } from '../db/repositories/provider-credentials';
import {
  answeredIds,
  doneCounts,
  endRun,
  getRun,
  launchRun,
  markRunQueued,
  markRunState,
  type NewRun,
  questionResults,
  questionsForRun,
  recordQuestionResult,
} from '../db/repositories/runs';
import { runSeatingContext } from '../engines/seating-context';
import type { ActivityDeps } from './deps';
import { createEngineCall } from './engine-call';

/** A question as its workflow gets it: the tier it runs at, and its prompt's tokens counted here (workflows have no tokenizer). */
export interface RunQuestion extends Question {
  tier: Tier;
  promptTokens: number;
}

export interface PreparedRun {
  /** The run already ended (a replayed start after its end): nothing to do. */
  ended: boolean;
  /** Questions with no recorded result yet; a resumed run starts only these. */
  remaining: RunQuestion[];
  tiers: TierLineup[];
  done: BucketCounts;
  startedAt: string | null;
}

export interface RunRef {
  runId: string;
  orgId: string;
  kind: RunKind;
  /** The key's kind; named `keyMode` in recorded histories, so it keeps that name. */
  keyMode: KeyKind;
  mode: ResolvedMode;
  spec: RunSpec;
}

/** What a launch writes when its workflow admits it: the run's row and charge, and the day's limit of launches. */
export interface RunLaunch {
  run: NewRun;
  dailyLimit: number;
}

/** The failure type (and spec code) of a run whose engines cannot run: nothing is answered, the charge is refunded. */
export const PROVIDER_UNAVAILABLE = 'provider_unavailable';

export function createBenchmarkActivities(deps: ActivityDeps) {
  const { db, engines } = deps;

  async function questionsOf(ref: RunRef): Promise<Question[]> {
    const found = await questionsForRun(db, ref.orgId, ref.spec);
    if ('questions' in found) return found.questions;
    throw ApplicationFailure.nonRetryable(
      `question set ${ref.spec.questionSetId} no longer holds the questions this run needs`,
      'invalid_request',
    );
  }

  return {
    /**
     * The run's row and its up-front charge in one transaction (db launchRun), or nothing: a refusal (the balance, a
     * billing state, a plan's allowance, the day's launches) is an answer, not a failure. Retried, it finds its own row
     * and admits again.
     */
    async admitRun(launch: RunLaunch): Promise<RunAdmission> {
      let launched;
      try {
        launched = await launchRun(db, launch.run, launch.dailyLimit);
      } catch (err) {
        if (
          err instanceof QuorumError &&
          (err.code === 'insufficient_balance' || err.code === 'plan_limit_reached' || isBillingRefusal(err.code))
        )
          return { refused: err.code, message: err.message };
        throw err;
      }
      if ('limited' in launched) {
        const tests = launch.run.kind === 'test';
        return {
          refused: tests ? 'test_launch_limit_exceeded' : 'certify_launch_limit_exceeded',
          message: `This organisation has launched ${launch.dailyLimit} ${tests ? 'test runs' : 'certifications'} in the last 24 hours.`,
        };
      }
      await markRunQueued(db, launched.run.id);
      return { admitted: true };
    },

    /** Marks the run running and returns what is left to answer and who answers and judges it, per tier. */
    async prepareRun(ref: RunRef): Promise<PreparedRun> {
      const run = await getRun(db, ref.runId);
      if (ENDED_STATES.includes(run.state))
        return { ended: true, remaining: [], tiers: [], done: await doneCounts(db, ref.runId), startedAt: null };
      const simOnly = ref.keyMode === 'test';
      // A plan's run seats the service's keys (its plan pays the service), never the organisation's own account.
      const own = simOnly || run.planPersonId !== null ? new Set<string>() : await ownProviderFamilies(db, ref.orgId);
      const lineup = lineUpRun(ref.mode.config, ref.spec, runSeatingContext(engines, own, simOnly));
      if (!lineup.ok)
        throw ApplicationFailure.nonRetryable(`engines the run needs cannot run: ${lineup.missing.join('; ')}`, PROVIDER_UNAVAILABLE);
      const startedAt = await markRunState(db, ref.runId, 'running');
      const answered = await answeredIds(db, ref.runId);
      const remaining = dealTiers(await questionsOf(ref), ref.spec.tiers)
        .filter((q) => !answered.has(q.id))
        .map((q) => ({ ...q, promptTokens: countMessagesTokens([{ role: 'user', content: q.question }]) }));
      return {
        ended: false,
        remaining,
        tiers: lineup.tiers,
        done: await doneCounts(db, ref.runId),
        startedAt: startedAt?.toISOString() ?? null,
      };
    },

    runJudge: createEngineCall(deps),

    /** One question's result, written as it completes: a crash after this loses nothing of it. */
    async recordQuestion(input: { runId: string; result: QuestionResult }): Promise<void> {
      await recordQuestionResult(db, input.runId, input.result);
    },

    async markJudging(input: { runId: string }): Promise<void> {
      await markRunState(db, input.runId, 'judging');
    },

    /**
     * The run's statistics from its question rows, written once with its end state (`incomplete` without the coverage
     * a verdict needs, domain/run-summary.ts); what its end gives back is credited (db/repositories/runs.ts `endRun`).
     */
    async finishRun(input: {
      runId: string;
      kind: RunKind;
      state: 'completed' | 'failed' | 'cancelled';
      errorCode?: string;
      errorMessage?: string;
    }): Promise<RunSummary | null> {
      const [results, run] = await Promise.all([questionResults(db, input.runId), getRun(db, input.runId)]);
      // A certification's verdict is held to its attempt's α (issue 38 item 3).
      const attempt = input.kind === 'certification' ? await certificationAttemptNumber(db, input.runId) : 1;
      const summary = results.length > 0 ? summarizeRun(input.kind, results, run.spec, attempt) : null;
      const state = endStateOf(input.kind, input.state, summary);
      const ended = await endRun(db, input.runId, { ...input, state, summary });
      return ended.summary;
    },
  };
}

export type BenchmarkActivities = ReturnType<typeof createBenchmarkActivities>;
