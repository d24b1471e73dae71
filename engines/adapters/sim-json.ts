import type { JsonSchema } from '../../domain/reply-schemas';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** Bounds on what a caller's schema can make a simulated engine write: past them the value is invalid, never huge. */
const MAX_ITEMS = 64;
const MAX_STRING = 4_000;
const MAX_DEPTH = 12;

/**
 * A simulated engine asked for structured output answers as a provider that enforces the schema does: a JSON value
 * valid against it, drawn from the call's own random stream (so the same call gives the same value), its strings
 * taken from the free text the engine would have written. It covers the JSON Schema a caller's `response_format`
 * uses in practice (OpenAI's strict subset and a little more: local `$ref`, `const`, `enum`, `anyOf`/`oneOf`, bounds
 * on numbers, lengths and item counts); a keyword it does not know is left to the validator, which then says so.
 */
export function schemaInstance(schema: JsonSchema, rand: () => number, words: string): Json {
  const root = schema;
  const text = words.replace(/\s+/g, ' ').trim() || 'answer';
  const resolve = (s: JsonSchema, hops = 0): JsonSchema => {
    const ref = s.$ref;
    if (typeof ref !== 'string' || !ref.startsWith('#/') || hops > MAX_DEPTH) return s;
    const found = ref
      .slice(2)
      .split('/')
      .reduce<unknown>((at, part) => (at && typeof at === 'object' ? (at as Record<string, unknown>)[part] : undefined), root);
    return isSchema(found) ? resolve(found, hops + 1) : {};
  };
  const draw = (raw: JsonSchema, depth: number): Json => {
    if (depth > MAX_DEPTH) return null;
    const s = resolve(raw);
    if ('const' in s) return s.const as Json;
    if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[Math.floor(rand() * s.enum.length)] as Json;
    const alternatives = (s.anyOf ?? s.oneOf) as unknown;
    if (Array.isArray(alternatives)) {
      const options = alternatives.filter(isSchema);
      // Deep inside, the null branch (when there is one) ends the recursion.
      const pick = depth > 4 ? (options.find((o) => o.type === 'null') ?? options[0]) : options[Math.floor(rand() * options.length)];
      return pick ? draw(pick, depth + 1) : null;
    }
    const type = Array.isArray(s.type) ? (s.type.find((t) => t !== 'null') ?? 'null') : (s.type ?? (s.properties ? 'object' : 'string'));
    switch (type) {
      case 'object':
        return object(s, depth);
      case 'array':
        return array(s, depth);
      case 'integer':
      case 'number':
        return number(s, type === 'integer');
      case 'boolean':
        return rand() < 0.5;
      case 'null':
        return null;
      default:
        return string(s);
    }
  };
  const object = (s: JsonSchema, depth: number): Json => {
    const props = isSchema(s.properties) ? s.properties : {};
    const out: { [key: string]: Json } = {};
    for (const [key, sub] of Object.entries(props)) if (isSchema(sub)) out[key] = draw(sub, depth + 1);
    if (Object.keys(props).length === 0 && s.additionalProperties !== false) out.answer = text;
    return out;
  };
  const array = (s: JsonSchema, depth: number): Json => {
    const min = Math.min(num(s.minItems) ?? 1, MAX_ITEMS);
    const max = Math.min(Math.max(min, num(s.maxItems) ?? Math.max(min, 3)), MAX_ITEMS);
    const count = depth > 4 ? min : min + Math.floor(rand() * (max - min + 1));
    const items = isSchema(s.items) ? s.items : {};
    return Array.from({ length: count }, () => draw(items, depth + 1));
  };
  const number = (s: JsonSchema, integer: boolean): number => {
    const low = num(s.minimum) ?? (num(s.exclusiveMinimum) ?? -1) + (integer ? 1 : 1e-6);
    const high = num(s.maximum) ?? (num(s.exclusiveMaximum) ?? low + 101) - (integer ? 1 : 1e-6);
    const v = low + rand() * Math.max(0, high - low);
    return integer ? Math.min(Math.floor(high), Math.max(Math.ceil(low), Math.round(v))) : Math.round(v * 1000) / 1000;
  };
  const string = (s: JsonSchema): string => {
    const min = Math.min(num(s.minLength) ?? 0, MAX_STRING);
    const max = Math.min(num(s.maxLength) ?? 200, MAX_STRING);
    const start = Math.floor(rand() * Math.max(1, text.length - 1));
    let out = `${text.slice(start)} ${text}`.slice(0, max).trim();
    while (out.length < min) out += ' ' + text;
    return out.slice(0, max);
  };
  return draw(schema, 0);
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function isSchema(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
