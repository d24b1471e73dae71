import {
  CLASSIFIER_MAX_OUTPUT_TOKENS,
  classifyFromModel,
  classifyHeuristic,
  parseModelJudgment,
  type Classification,
} from '../domain/classifier';
import type { ChatMessage } from '../domain/messages';
import type { ClassifierCall } from '../domain/outcome';
import { classifierPrompt } from '../domain/prompts';
import { classificationSchema } from '../domain/reply-schemas';
import type { Logger } from '../infra/log';
import type { Engines } from './index';

/** The classifier is a small, fast model: past this the heuristic answers instead. */
const CLASSIFIER_TIMEOUT_MS = 8_000;

/** Whether `classifyPrompt` asks a model (`engineId` configured and reachable), or the heuristic answers in process. */
export function asksClassifierModel(engines: Engines, engineId: string | undefined): engineId is string {
  return !!engineId && engines.isAvailable(engineId);
}

/**
 * The one classifier of a call, used by the deliberation's classify step and by `/v1/estimate` alike (spec 01:
 * "Uses the same classifier as a real call"). With a classifier engine configured and reachable it asks that small
 * model and falls back to the heuristic on any failure; `classifiedBy` says which answered. Without one, the
 * heuristic answers in well under a millisecond. `call` is the model's call when it answered (read or not: its
 * tokens were spent), for a deliberation to count and bill.
 */
export async function classifyPrompt(
  engines: Engines,
  log: Logger,
  messages: ChatMessage[],
  engineId: string | undefined,
): Promise<{ classification: Classification; call?: ClassifierCall }> {
  if (!asksClassifierModel(engines, engineId)) return { classification: classifyHeuristic(messages) };
  let call: ClassifierCall | undefined;
  try {
    const r = await engines.call({
      engineId,
      messages: classifierPrompt(messages),
      maxOutputTokens: CLASSIFIER_MAX_OUTPUT_TOKENS,
      timeoutMs: CLASSIFIER_TIMEOUT_MS,
      reply: classificationSchema,
    });
    call = {
      modelUsed: r.engineId,
      tokensIn: r.tokensIn,
      tokensOut: r.tokensOut,
      reasoningTokens: r.reasoningTokens,
      realCostMicros: r.costMicros,
      latencyMs: r.latencyMs,
    };
    const judgment = parseModelJudgment(r.text);
    if (judgment) return { classification: classifyFromModel(messages, judgment), call };
    log.warn('classifier model gave no usable answer; heuristic used', { engineId });
  } catch (err) {
    log.warn('classifier model failed; heuristic used', { engineId, err });
  }
  return { classification: classifyHeuristic(messages), call };
}
