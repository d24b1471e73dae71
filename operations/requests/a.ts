import { z } from 'zod';
import { AnswerKindSchema, MessagesSchema, ModelSchema, StreamSchema, withAnswerKind, type RequestSchemas } from './common';
import { callOptionsOf, oneEndUser, OPENAI_FIELDS } from './openai-params';

const completion = z.object({
  model: ModelSchema.describe('A mode key (`api_model_id`) from the model list.'),
  messages: MessagesSchema,
  stream: StreamSchema,
  svc: z.looseObject({ answer_kind: AnswerKindSchema }).optional().describe('Per-call overrides; extra keys allowed.'),
  ...OPENAI_FIELDS,
});

/** Form A: `model` is a mode key; no tier and no per-call ceiling (the mode's ceiling stops the run). */
export const formARequests: RequestSchemas = {
  completion: completion.superRefine(oneEndUser).transform(({ model, messages, stream, svc, ...openai }) => ({
    model,
    messages,
    stream,
    ...withAnswerKind(svc, callOptionsOf(openai)),
  })),
  // `tier` is not a Form A field (spec 01: "Form B"): taken and ignored, as it always was, so not refused as unknown.
  completionKeys: [...Object.keys(completion.shape), 'tier'],
  estimate: z.object({ model: ModelSchema.describe('A mode key.'), messages: MessagesSchema }),
  completionMissingModel: 'invalid_model',
};
