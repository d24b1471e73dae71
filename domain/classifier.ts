import { z } from 'zod';
import { parseJsonReply } from './json-reply';
import type { ChatMessage } from './messages';
import type { Depth } from './modes';
import { HALLUCINATION_RISKS, TASK_TYPES } from './reply-schemas';

/**
 * The heuristic classifier: word count, keywords and structure → a difficulty on a 0–1 scale plus the routing
 * decisions derived from it. Pure and cheap (the estimate endpoint's budget is 5 ms); the small-model classifier
 * answers on the same scale and falls back to this on any failure.
 */
export type TaskType = (typeof TASK_TYPES)[number];
export type HallucinationRisk = (typeof HALLUCINATION_RISKS)[number];
export type Lane = 'express' | 'panel';

export interface DeliberationValue {
  verdict: 'likely_helps' | 'likely_hurts' | 'unknown';
  reason: string;
  basis: string;
  evidence: string;
}

export interface Classification {
  difficulty: number;
  depth: Depth;
  taskType: TaskType;
  hallucinationRisk: HallucinationRisk;
  grounding: boolean;
  lane: Lane;
  minorityInsightLikely: boolean;
  deliberationValue: DeliberationValue;
  /** Which classifier produced this: the heuristic, or a small model through the engines layer. */
  classifiedBy: 'heuristic' | 'model';
}

const KEYWORDS: Readonly<Record<Exclude<TaskType, 'other'>, RegExp>> = {
  code: /```|\b(function|class|bug|stack trace|compile|python|typescript|javascript|java|rust|golang|sql|regex|api|refactor|exception)\b/i,
  math: /\b(calculate|compute|solve|equation|integral|derivative|probability|sum of|how many|percent|prime|matrix|proof that)\b|\d+\s*[-+*/^×÷]\s*\d+/i,
  reasoning: /\b(why|explain|compare|trade-?offs?|analy[sz]e|evaluate|prove|argue|implications?|pros and cons|reason)\b/i,
  writing: /\b(write|draft|essay|poem|story|email|rewrite|summari[sz]e|tone|paragraph|blog)\b/i,
  advice: /\b(should i|recommend|advice|best way|what would you|is it wise|help me decide)\b/i,
  factual: /\b(who|when|where|what is|what are|which|capital of|founded|population|born|define|definition)\b/i,
};
const ORDER: readonly Exclude<TaskType, 'other'>[] = ['code', 'math', 'reasoning', 'advice', 'writing', 'factual'];
const TASK_WEIGHT: Readonly<Record<TaskType, number>> = {
  code: 0.25,
  math: 0.25,
  reasoning: 0.2,
  advice: 0.15,
  writing: 0.1,
  factual: 0.05,
  other: 0.05,
};

const TIME_SENSITIVE = /\b(latest|current(ly)?|today|this (week|month|year)|recent(ly)?|news|now|price of|stock|20[2-9]\d)\b/i;
const SPECIFICS = /\b(cite|citation|source|reference|statistic|exact(ly)?|quote|according to|study|studies)\b/i;
const HARD_MARKERS = /\b(step by step|rigorous(ly)?|edge cases?|prove|optimi[sz]e|complexity|multi-step|constraints?)\b/i;

function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

export function depthFor(difficulty: number): Depth {
  return difficulty < 0.35 ? 'light' : difficulty < 0.65 ? 'medium' : 'deep';
}

/** What a small classifier model may judge for itself; everything else is derived on the heuristic's scale. */
export interface ModelJudgment {
  difficulty: number;
  taskType: TaskType;
  hallucinationRisk: HallucinationRisk;
  needsSearch: boolean;
}

export function classifyHeuristic(messages: readonly ChatMessage[]): Classification {
  return classify(messages);
}

/** The model's judgment on the same 0–1 scale, with depth, lane and the rest derived exactly as for the heuristic. */
export function classifyFromModel(messages: readonly ChatMessage[], judgment: ModelJudgment): Classification {
  return classify(messages, judgment);
}

function classify(messages: readonly ChatMessage[], model?: ModelJudgment): Classification {
  const userText = messages
    .filter((m) => m.role === 'user')
    .map((m) => m.content)
    .join('\n');
  const text = userText || messages.map((m) => m.content).join('\n');
  const words = text.split(/\s+/).filter(Boolean).length;

  const taskType: TaskType = model?.taskType ?? ORDER.find((t) => KEYWORDS[t].test(text)) ?? 'other';
  const matchedTypes = ORDER.filter((t) => KEYWORDS[t].test(text)).length;
  const questions = (text.match(/\?/g) ?? []).length;
  const listItems = (text.match(/^\s*(\d+[.)]|[-*•])\s+/gm) ?? []).length;
  const codeBlocks = (text.match(/```/g) ?? []).length / 2;

  const difficulty = model
    ? round3(clamp01(model.difficulty))
    : round3(
        clamp01(
          0.05 +
            Math.min(words / 300, 0.3) +
            TASK_WEIGHT[taskType] +
            Math.min(matchedTypes - 1, 3) * 0.05 +
            Math.min(questions - 1, 3) * 0.04 +
            Math.min(listItems, 5) * 0.02 +
            Math.min(codeBlocks, 2) * 0.05 +
            (HARD_MARKERS.test(text) ? 0.15 : 0) +
            (messages.length > 3 ? 0.05 : 0),
        ),
      );
  const depth = depthFor(difficulty);

  const timeSensitive = TIME_SENSITIVE.test(text);
  const wantsSpecifics = SPECIFICS.test(text);
  const hallucinationRisk: HallucinationRisk =
    model?.hallucinationRisk ??
    ((taskType === 'factual' && (timeSensitive || wantsSpecifics)) || (wantsSpecifics && timeSensitive)
      ? 'high'
      : taskType === 'factual' || wantsSpecifics
        ? 'medium'
        : 'low');
  // Most prompts do not need a search: only factual ones about the present, or asking for sources.
  const grounding = model ? model.needsSearch : hallucinationRisk === 'high' && (timeSensitive || wantsSpecifics);
  const lane: Lane = difficulty < 0.25 && hallucinationRisk !== 'high' ? 'express' : 'panel';
  const minorityInsightLikely = difficulty >= 0.55 && (taskType === 'reasoning' || taskType === 'advice' || taskType === 'math');

  const basis = model ? 'model' : 'heuristic';
  const evidence = `${words} words; task ${taskType}; ${questions} question mark(s); difficulty ${difficulty}`;
  const deliberationValue: DeliberationValue =
    difficulty >= 0.45 || taskType === 'math' || taskType === 'code'
      ? { verdict: 'likely_helps', reason: 'Harder or checkable prompts gain from independent answers and a judge.', basis, evidence }
      : difficulty < 0.2
        ? { verdict: 'likely_hurts', reason: 'An easy prompt: one engine answers as well, faster and cheaper.', basis, evidence }
        : { verdict: 'unknown', reason: 'Neither clearly easy nor clearly hard.', basis, evidence };

  return {
    difficulty,
    depth,
    taskType,
    hallucinationRisk,
    grounding,
    lane,
    minorityInsightLikely,
    deliberationValue,
    classifiedBy: model ? 'model' : 'heuristic',
  };
}

/** The classifier is asked for a short JSON verdict: at most this much output. */
export const CLASSIFIER_MAX_OUTPUT_TOKENS = 200;

const ModelReply = z.object({
  // Clamped, not refused: see domain/reply-schemas.ts.
  difficulty: z.number().transform((n) => Math.min(1, Math.max(0, n))),
  task_type: z.enum(TASK_TYPES),
  hallucination_risk: z.enum(HALLUCINATION_RISKS),
  needs_search: z.boolean(),
});

/** Reads a classifier model's reply; undefined when it is not the JSON asked for (the heuristic then answers). */
export function parseModelJudgment(text: string): ModelJudgment | undefined {
  const r = parseJsonReply(text, ModelReply);
  return r && { difficulty: r.difficulty, taskType: r.task_type, hallucinationRisk: r.hallucination_risk, needsSearch: r.needs_search };
}
