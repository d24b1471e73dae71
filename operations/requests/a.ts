import { z } from 'zod';
import { MessagesSchema, ModelSchema, StreamSchema, type RequestSchemas } from './common';

/** Form A: `model` is a mode key; no tier and no per-call ceiling (the mode's ceiling stops the run). */
export const formARequests: RequestSchemas = {
  completion: z.object({
    model: ModelSchema.describe('A mode key (`api_model_id`) from the model list.'),
    messages: MessagesSchema,
    stream: StreamSchema,
    svc: z.looseObject({}).optional().describe('Per-call overrides; extra keys allowed.'),
  }),
  estimate: z.object({ model: ModelSchema.describe('A mode key.'), messages: MessagesSchema }),
  completionMissingModel: 'invalid_model',
};
