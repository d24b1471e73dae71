/**
 * The JSON Schemas staff replies are asked for in structure (the protocol's structured output: an OpenAI-compatible
 * `response_format`, an Anthropic or Bedrock forced tool, Gemini's `responseSchema`). Written in the subset every one
 * of them accepts in strict mode: every property required, no additional properties, `null` through `anyOf`. A server
 * that enforces them with a grammar (llama.cpp, vLLM) bounds enums and integers but not every numeric range, so the
 * readers clamp ranges rather than trust them. Plain objects, no schema library: the workflow bundle imports this.
 */
export type JsonSchema = { [key: string]: JsonValue };
type JsonValue = string | number | boolean | null | JsonValue[] | JsonSchema;

export interface ReplySchema {
  /** A name for the schema (OpenAI's `json_schema.name`, the forced tool's name): letters, digits, `_`. */
  name: string;
  schema: JsonSchema;
  /** A caller's schema: OpenAI's `strict` as the caller set it (Quorum's own staff schemas are always strict). */
  strict?: boolean;
  /** Any JSON object (OpenAI's `json_object`): `schema` is only `{type: 'object'}`, for the protocols that need one. */
  anyObject?: boolean;
}

function object(properties: Record<string, JsonSchema>): JsonSchema {
  return { type: 'object', additionalProperties: false, properties, required: Object.keys(properties) };
}

/**
 * Free text, bounded: without a bound a small model under a grammar can fill its whole output limit with one string,
 * and the reply is cut before it closes. OpenAI's strict mode refuses `maxLength` (its adapter removes it; its
 * models stop on their own); llama.cpp, vLLM and Gemini enforce it.
 */
const text = (maxLength: number): JsonSchema => ({ type: 'string', maxLength });
const oneOf = (values: readonly string[]): JsonSchema => ({ type: 'string', enum: [...values] });

/**
 * The deliberation judge's verdict over the labels it was shown. Short fields first, the free text last: a small
 * model that runs out of room has then written what the verdict needs. Scores are whole numbers (grammars enforce
 * an integer's range, not a decimal's).
 */
export function judgmentSchema(labels: readonly string[]): ReplySchema {
  const score: JsonSchema = { type: 'integer', minimum: 0, maximum: 10 };
  return {
    name: 'judgment',
    schema: object({
      scores: object(Object.fromEntries(labels.map((l) => [l, score]))),
      best: oneOf(labels),
      converged: { type: 'boolean' },
      divergence: { type: 'number', minimum: 0, maximum: 1 },
      factual_conflict: { type: 'boolean' },
      contested: { anyOf: [{ type: 'null' }, object({ label: oneOf(labels), quote: text(200), why: text(200) })] },
      why: text(300),
    }),
  };
}

/** A run judge's pick among the labels it was shown, or a tie. */
export function runVerdictSchema(labels: readonly string[]): ReplySchema {
  return { name: 'verdict', schema: object({ winner: oneOf([...labels, 'tie']), why: text(300) }) };
}

export const TASK_TYPES = ['factual', 'reasoning', 'math', 'code', 'writing', 'advice', 'other'] as const;
export const HALLUCINATION_RISKS = ['low', 'medium', 'high'] as const;

/** The classifier model's reading of a prompt. */
export const classificationSchema: ReplySchema = {
  name: 'classification',
  schema: object({
    difficulty: { type: 'number', minimum: 0, maximum: 1 },
    task_type: oneOf(TASK_TYPES),
    hallucination_risk: oneOf(HALLUCINATION_RISKS),
    needs_search: { type: 'boolean' },
  }),
};
