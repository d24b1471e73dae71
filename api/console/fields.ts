import type { Context } from 'koa';
import { z } from 'zod';
import { ConsoleRefusal } from './session';

/** A console form's fields, checked with zod: a field of the wrong shape is a refused request, never a crash. */
export function fieldsOf<T extends z.ZodRawShape>(ctx: Context, shape: T): z.infer<z.ZodObject<T>> {
  const parsed = z.object(shape).safeParse(ctx.request.body ?? {});
  if (!parsed.success)
    throw new ConsoleRefusal(400, `The form was incomplete: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}.`);
  return parsed.data;
}

/** A text field as browsers send it (absent when empty in some forms). */
export const text = (max = 1_000): z.ZodDefault<z.ZodString> => z.string().max(max).default('');
