import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019';
import { Ajv2020 } from 'ajv/dist/2020';
import type { AnswerFormat } from './answer-options';
import type { JsonSchema } from './reply-schemas';

/**
 * A caller's JSON Schema checked with Ajv (a maintained JSON Schema validator, already in the tree under the MCP SDK,
 * now a direct dependency): at the API, that the schema compiles (else 400 before anything runs); at the end of a
 * deliberation (the `checkAnswer` local activity), that the answer parses and validates. Not imported by workflows:
 * Ajv compiles validators with `new Function`, which belongs outside the workflow sandbox. A schema that refers to
 * another document is refused: Ajv is given no loader, so nothing is fetched.
 */

/** The dialects a schema may declare in `$schema` (issue 53): what zod, zod-to-json-schema and pydantic write. */
const DIALECTS = { 'draft-07': Ajv, '2019-09': Ajv2019, '2020-12': Ajv2020 } as const;
type Dialect = keyof typeof DIALECTS;

/** Each dialect's meta-schema URI, compared without the scheme's `s` and a trailing `#` (generators differ in both). */
const DIALECT_URIS: Readonly<Record<string, Dialect>> = {
  'json-schema.org/draft-07/schema': 'draft-07',
  'json-schema.org/draft/2019-09/schema': '2019-09',
  'json-schema.org/draft/2020-12/schema': '2020-12',
};

/** Anywhere in the schema, an `items` that is an array: draft-07's tuple, which 2020-12 writes as `prefixItems`. */
function usesDraft07Tuples(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(usesDraft07Tuples);
  if (typeof value !== 'object' || value === null) return false;
  return Object.entries(value).some(
    ([k, v]) => (k === 'items' && Array.isArray(v)) || (!['const', 'enum', 'default', 'examples'].includes(k) && usesDraft07Tuples(v)),
  );
}

/**
 * The dialect the schema is read in: the one its `$schema` names; without one, 2020-12 (the current draft, as pydantic
 * writes it), or draft-07 when it writes a tuple draft-07's way. A `$schema` naming another is a problem, said so.
 */
function dialectOf(schema: JsonSchema): Dialect | { problem: string } {
  const declared = schema.$schema;
  if (declared === undefined) return usesDraft07Tuples(schema) ? 'draft-07' : '2020-12';
  const known = typeof declared === 'string' ? DIALECT_URIS[declared.replace(/^https?:\/\//, '').replace(/#$/, '')] : undefined;
  if (known) return known;
  return {
    problem: `\`$schema\` ${JSON.stringify(declared)} is not a dialect Quorum checks: send draft-07 (http://json-schema.org/draft-07/schema#), 2019-09 or 2020-12 (https://json-schema.org/draft/2020-12/schema), or leave \`$schema\` out`,
  };
}

function validatorOf(schema: JsonSchema, dialect: Dialect): ValidateFunction {
  // `$schema` chose the class; the root's copy is left out, so each class checks the schema against its own meta-schema
  // whichever spelling of the URI was sent. A validator of its own per check: no cache to grow with every caller's
  // schema (Ajv keeps each one it compiled).
  const root = Object.fromEntries(Object.entries(schema).filter(([k]) => k !== '$schema'));
  return new DIALECTS[dialect]({ strict: false, allErrors: false, validateFormats: false }).compile(root);
}

/** Why the schema cannot be used, or undefined when it compiles in its dialect. */
export function schemaProblem(schema: JsonSchema): string | undefined {
  const dialect = dialectOf(schema);
  if (typeof dialect === 'object') return dialect.problem;
  try {
    validatorOf(schema, dialect);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * Why the answer does not meet the format, or undefined when it does: the whole text must be JSON (an object for
 * `json_object`) and, for `json_schema`, valid against the schema.
 */
export function answerFormatProblem(text: string, format: AnswerFormat): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'the answer is not JSON';
  }
  if (format.type === 'json_object')
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? undefined : 'the answer is not a JSON object';
  const dialect = dialectOf(format.schema);
  // The API refused such a schema before anything ran (schemaProblem): no answer can meet it.
  if (typeof dialect === 'object') return dialect.problem;
  const validate = validatorOf(format.schema, dialect);
  if (validate(value)) return undefined;
  const first = validate.errors?.[0];
  return `the answer does not validate against the schema: ${first ? `${first.instancePath || '(root)'} ${first.message ?? ''}`.trim() : 'invalid'}`;
}
