import { Ajv, type ValidateFunction } from 'ajv';
import type { AnswerFormat } from './answer-options';
import type { JsonSchema } from './reply-schemas';

/**
 * A caller's JSON Schema checked with Ajv (a maintained JSON Schema validator, already in the tree under the MCP SDK,
 * now a direct dependency): at the API, that the schema compiles (else 400 before anything runs); at the end of a
 * deliberation (the `checkAnswer` local activity), that the answer parses and validates. Not imported by workflows:
 * Ajv compiles validators with `new Function`, which belongs outside the workflow sandbox. A schema that refers to
 * another document is refused: Ajv is given no loader, so nothing is fetched.
 */
function validatorOf(schema: JsonSchema): ValidateFunction {
  // A validator of its own per check: no cache to grow with every caller's schema (Ajv keeps each one it compiled).
  return new Ajv({ strict: false, allErrors: false, validateFormats: false }).compile(schema);
}

/** Why the schema cannot be used, or undefined when it compiles. */
export function schemaProblem(schema: JsonSchema): string | undefined {
  try {
    validatorOf(schema);
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
  const validate = validatorOf(format.schema);
  if (validate(value)) return undefined;
  const first = validate.errors?.[0];
  return `the answer does not validate against the schema: ${first ? `${first.instancePath || '(root)'} ${first.message ?? ''}`.trim() : 'invalid'}`;
}
