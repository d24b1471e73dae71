import { z } from 'zod';
import { BATCH_STATES } from '../../domain/runs';
import { RUN_PAGE } from '../../operations/run-list';
import type { JsonObject } from '../forms/json';
import { BatchSchema, CertificationSchema } from './run-resources';

/** `GET /v1/runs` and the cancel routes (issue 28 items 1 and 2) for the OpenAPI document; the tests parse replies with these. */

export const RunListSchema = z.object({
  object: z.literal('list'),
  data: z
    .array(
      BatchSchema.extend({
        certification: CertificationSchema.nullable()
          .optional()
          .describe('A certification’s entry: the poll’s `certification` (null until a verdict). Absent on a test run’s.'),
      }),
    )
    .describe('Newest first: each entry the `batch` its poll returns.'),
  first_id: z.uuid().nullable(),
  last_id: z.uuid().nullable().describe('Pass as `after` for the next page.'),
  has_more: z.boolean(),
});

export const RUN_LIST_PARAMETERS: JsonObject[] = [
  {
    name: 'limit',
    in: 'query',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: RUN_PAGE.max, default: RUN_PAGE.default },
  },
  {
    name: 'after',
    in: 'query',
    required: false,
    description: 'The `last_id` of the page before.',
    schema: { type: 'string', format: 'uuid' },
  },
  {
    name: 'kind',
    in: 'query',
    required: false,
    description: 'Test runs or certifications; without it, every kind the key’s scopes read (`tests`, `certify`).',
    schema: { type: 'string', enum: ['test', 'certify'] },
  },
  { name: 'model', in: 'query', required: false, description: 'Runs launched with exactly this `model`.', schema: { type: 'string' } },
  { name: 'state', in: 'query', required: false, schema: { type: 'string', enum: [...BATCH_STATES] } },
];
