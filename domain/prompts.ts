import { lastUserText, type ChatMessage } from './messages';

/**
 * The texts Quorum sends to seats, judge and synthesiser. Seats never see engine names: other answers are
 * shown under neutral labels only.
 */
export interface LabelledAnswer {
  label: string;
  text: string;
}

function groundingBlock(snippets: readonly string[]): string {
  return snippets.length
    ? `Search results that may help (cite only what they support):\n${snippets.map((s, i) => `[${i + 1}] ${s}`).join('\n')}`
    : '';
}

/** Round 1: the caller's conversation, with grounding results ahead of it when the search fired. */
export function seatPrompt(messages: readonly ChatMessage[], snippets: readonly string[]): ChatMessage[] {
  const grounding = groundingBlock(snippets);
  return grounding ? [{ role: 'system', content: grounding }, ...messages] : [...messages];
}

/** A critique round: the seat sees its own previous answer and the others' (anonymised), and revises. */
export function critiquePrompt(
  messages: readonly ChatMessage[],
  snippets: readonly string[],
  own: string,
  others: readonly LabelledAnswer[],
): ChatMessage[] {
  const review = others.map((o) => `Answer ${o.label}:\n${o.text}`).join('\n\n');
  return [
    ...seatPrompt(messages, snippets),
    { role: 'assistant', content: own },
    {
      role: 'user',
      content: `Other panelists answered the same question:\n\n${review}\n\nCritique their answers and yours. Where they are right and you were wrong, change your answer; where you are right, keep it. Reply with your revised final answer only.`,
    },
  ];
}

/** Marks a judge request, so any engine (the simulated ones included) can recognise what is asked. */
export const JUDGE_TAG = 'QUORUM-JUDGE-V1';

export function judgePrompt(messages: readonly ChatMessage[], answers: readonly LabelledAnswer[]): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        `${JUDGE_TAG}\nYou judge anonymous answers to one question. Score each from 0 to 10 for correctness and usefulness. ` +
        'Reply with JSON only: {"scores":{"<label>":number,...},"best":"<label>","why":string,"divergence":number (0 = identical positions, 1 = incompatible),' +
        '"converged":boolean,"contested":{"label":string,"quote":string,"why":string}|null,"factual_conflict":boolean}',
    },
    {
      role: 'user',
      content: `Question:\n${lastUserText(messages)}\n\n${answers.map((a) => `Answer ${a.label}:\n${a.text}`).join('\n\n')}`,
    },
  ];
}

/** Marks a synthesis request, so the simulated engines can recognise it. */
export const SYNTHESIS_TAG = 'QUORUM-SYNTHESIS-V1';

/** A request to write one answer from labelled ones: the panel's synthesis, and Self-MoA's aggregation. */
function oneAnswerPrompt(
  messages: readonly ChatMessage[],
  answers: readonly LabelledAnswer[],
  words: { shown: string; unmentioned: string; after: string },
): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        `${SYNTHESIS_TAG}\nWrite the single best answer to the question from the ${words.shown} below.` +
        ' Keep what is correct, drop what is wrong, ' +
        `resolve disagreements explicitly. Do not mention ${words.unmentioned}; answer the user directly.`,
    },
    {
      role: 'user',
      content: `Question:\n${lastUserText(messages)}\n\n${answers.map((a) => `Answer ${a.label}:\n${a.text}`).join('\n\n')}${words.after}`,
    },
  ];
}

export function synthesisPrompt(
  messages: readonly ChatMessage[],
  answers: readonly LabelledAnswer[],
  bestLabel: string,
  judgeNote: string,
): ChatMessage[] {
  return oneAnswerPrompt(messages, answers, {
    shown: 'panel answers',
    unmentioned: 'the panel, answers or labels',
    after: `\n\nThe judge preferred answer ${bestLabel}: ${judgeNote}`,
  });
}

/**
 * Self-MoA's aggregation (issue 39 item 2): one engine's several answers to the question, written into one. The
 * synthesis prompt without a judge's preference, since the arm spends nothing on judging.
 */
export function aggregationPrompt(messages: readonly ChatMessage[], answers: readonly LabelledAnswer[]): ChatMessage[] {
  return oneAnswerPrompt(messages, answers, { shown: 'candidate answers', unmentioned: 'the candidates or labels', after: '' });
}

/** Marks a classification request, so the simulated engines can recognise it. */
export const CLASSIFY_TAG = 'QUORUM-CLASSIFY-V1';

export function classifierPrompt(messages: readonly ChatMessage[]): ChatMessage[] {
  return [
    {
      role: 'system',
      content:
        `${CLASSIFY_TAG}\nClassify the user's prompt. Reply with JSON only: {"difficulty": number from 0 (trivial) to 1 (expert, multi-step),` +
        ' "task_type": "factual"|"reasoning"|"math"|"code"|"writing"|"advice"|"other", "hallucination_risk": "low"|"medium"|"high",' +
        ' "needs_search": boolean (true only when current or cited facts are needed)}',
    },
    { role: 'user', content: lastUserText(messages).slice(0, 4_000) },
  ];
}
