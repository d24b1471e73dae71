import { classifyFromModel, classifyHeuristic, parseModelJudgment, type Classification } from '../domain/classifier';
import type { ChatMessage } from '../domain/messages';
import { classifierPrompt } from '../domain/prompts';
import { classificationSchema } from '../domain/reply-schemas';
import type { Logger } from '../infra/log';
import type { Engines } from './index';

/** The classifier is a small, fast model: past this the heuristic answers instead. */
const CLASSIFIER_TIMEOUT_MS = 8_000;

/**
 * The one classifier of a call, used by the deliberation's classify step and by `/v1/estimate` alike (spec 01:
 * "Uses the same classifier as a real call"). With a classifier engine configured and reachable it asks that small
 * model and falls back to the heuristic on any failure; `classifiedBy` says which answered. Without one, the
 * heuristic answers in well under a millisecond.
 */
export async function classifyPrompt(
  engines: Engines,
  log: Logger,
  messages: ChatMessage[],
  engineId: string | undefined,
): Promise<Classification> {
  if (!engineId || !engines.isAvailable(engineId)) return classifyHeuristic(messages);
  try {
    const r = await engines.call({
      engineId,
      messages: classifierPrompt(messages),
      maxOutputTokens: 200,
      timeoutMs: CLASSIFIER_TIMEOUT_MS,
      reply: classificationSchema,
    });
    const judgment = parseModelJudgment(r.text);
    if (judgment) return classifyFromModel(messages, judgment);
    log.warn('classifier model gave no usable answer; heuristic used', { engineId });
  } catch (err) {
    log.warn('classifier model failed; heuristic used', { engineId, err });
  }
  return classifyHeuristic(messages);
}
