import { z } from 'zod';
import { AnswerKindSchema, MessagesSchema, ModelSchema, StreamSchema, TierSchema, withAnswerKind, type RequestSchemas } from './common';
import { callOptionsOf, oneEndUser, OPENAI_FIELDS } from './openai-params';

const Ticker = ModelSchema.describe('A ticker `COMPANY:MODE` (mode part four letters A-Z), optionally with `:LAB`.');

const completion = z.object({
  model: Ticker,
  messages: MessagesSchema,
  stream: StreamSchema,
  tier: TierSchema,
  svc: z
    .looseObject({
      max_cost_usd: z.number().positive().optional().describe('Lowers the ceiling for this call; cannot raise it.'),
      answer_kind: AnswerKindSchema,
    })
    .optional()
    .describe('Per-call overrides; extra keys allowed.'),
  ...OPENAI_FIELDS,
});

/** Form B: `model` is a ticker; `tier` picks the seats; `svc.max_cost_usd` may lower the call's ceiling. */
export const formBRequests: RequestSchemas = {
  completion: completion.superRefine(oneEndUser).transform(({ model, messages, stream, tier, svc, ...openai }) => ({
    model,
    messages,
    stream,
    tier,
    ...withAnswerKind(svc, callOptionsOf(openai)),
  })),
  completionKeys: Object.keys(completion.shape),
  estimate: z.object({ model: Ticker, messages: MessagesSchema, tier: TierSchema }),
  // Spec 01: "Form B: invalid_messages is also returned when model is missing on this endpoint."
  completionMissingModel: 'invalid_messages',
};
