import type { z } from 'zod';

/**
 * The JSON a model was asked to reply with: models often wrap it in prose or code fences, so the outermost `{...}` is
 * taken. Undefined when there is none or it is not JSON.
 */
export function jsonObjectIn(text: string): unknown {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end <= start) return undefined;
  try {
    return JSON.parse(text.slice(start, end + 1)) as unknown;
  } catch {
    return undefined;
  }
}

/** The JSON object a model was asked to reply with (see `jsonObjectIn`), validated: undefined when it does not fit the schema. */
export function parseJsonReply<T>(text: string, schema: z.ZodType<T>): T | undefined {
  const raw = jsonObjectIn(text);
  if (raw === undefined) return undefined;
  const parsed = schema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
