import type { z } from 'zod';

/**
 * The JSON object a model was asked to reply with, validated: models often wrap it in prose or code fences,
 * so the outermost `{...}` is taken. Undefined when there is none or it does not fit the schema.
 */
export function parseJsonReply<T>(text: string, schema: z.ZodType<T>): T | undefined {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end <= start) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text.slice(start, end + 1));
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
