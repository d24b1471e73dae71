import { DEFAULT_CALLBACK_RETRY_MS } from '../domain/webhook-signature';
import { DEFAULT_RUN_WINDOW } from '../domain/runs';
import type { Config } from '../infra/config';

/** How runs are limited and paced in this deployment (environment, with defaults), and what their operations need. */
export interface RunSettings {
  testsPerDay: number;
  certificationsPerDay: number;
  /** Questions in flight per run. */
  window: number;
  /** A run continues as new past this many history events (the workflow's default when absent). */
  historyLimit?: number;
  /** A run's engine calls still out after this long get a duplicate request (0: never); see workflows/hedge.ts. */
  hedgeAfterMs?: number;
  /** How long an advisor quote can be approved (default a day). */
  quoteTtlSeconds?: number;
  /** Advisor quotes need chat history; a deployment that keeps none answers `chat_history_required` (default on). */
  chatHistory?: boolean;
  /** A run's completion callback: the first retry's wait (QUORUM_CALLBACK_RETRY_MS; tests shorten it). */
  callbackRetryMs?: number;
  /** Refuse callback URLs that resolve inside the deployment's networks (SSRF): production's rule. */
  publicCallbacksOnly?: boolean;
}

/**
 * Hedge a run's engine calls still out after 45 s (about the spec's p70): about 30% of calls get a duplicate, and
 * a certification at the spec's latency ends in under 10 minutes (bench/certification.ts: 9.5 min; 10.1 at 60 s).
 */
export const DEFAULT_HEDGE_AFTER_MS = 45_000;
export const DEFAULT_RUN_SETTINGS: RunSettings = {
  testsPerDay: 20,
  certificationsPerDay: 3,
  window: DEFAULT_RUN_WINDOW,
  hedgeAfterMs: DEFAULT_HEDGE_AFTER_MS,
};
export const LAUNCH_RETRY_AFTER_S = 3_600;
export const DEFAULT_QUOTE_TTL_S = 86_400;
export { DEFAULT_CALLBACK_RETRY_MS };

export function runSettingsOf(
  config: Pick<
    Config,
    | 'QUORUM_TEST_RUNS_PER_DAY'
    | 'QUORUM_CERTIFICATIONS_PER_DAY'
    | 'QUORUM_RUN_WINDOW'
    | 'QUORUM_RUN_HEDGE_MS'
    | 'QUORUM_QUOTE_TTL_S'
    | 'QUORUM_CHAT_HISTORY'
    | 'QUORUM_CALLBACK_RETRY_MS'
    | 'QUORUM_ENV'
  >,
): RunSettings {
  return {
    testsPerDay: config.QUORUM_TEST_RUNS_PER_DAY ?? DEFAULT_RUN_SETTINGS.testsPerDay,
    certificationsPerDay: config.QUORUM_CERTIFICATIONS_PER_DAY ?? DEFAULT_RUN_SETTINGS.certificationsPerDay,
    window: config.QUORUM_RUN_WINDOW ?? DEFAULT_RUN_SETTINGS.window,
    // 0 is a setting (never hedge), not an absence.
    hedgeAfterMs: config.QUORUM_RUN_HEDGE_MS ?? DEFAULT_HEDGE_AFTER_MS,
    quoteTtlSeconds: config.QUORUM_QUOTE_TTL_S ?? DEFAULT_QUOTE_TTL_S,
    chatHistory: config.QUORUM_CHAT_HISTORY !== 'off',
    callbackRetryMs: config.QUORUM_CALLBACK_RETRY_MS ?? DEFAULT_CALLBACK_RETRY_MS,
    publicCallbacksOnly: config.QUORUM_ENV === 'production',
  };
}
