import type { Context } from 'koa';
import { QuorumError } from '../../domain/errors';

/** Far above any prompt the input-token limit admits (8,000 tokens ≈ 32 KB) and a raised one, small enough to bound the work a body can cause. */
export const MAX_BODY_BYTES = 256 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Spec 01 names this condition `request_too_large` (413). */
function tooLarge(message: string): QuorumError {
  return new QuorumError('request_too_large', message);
}

function invalid(message: string): QuorumError {
  return new QuorumError('invalid_request', message);
}

/** Collects the raw body, refusing (400) as soon as it passes the cap instead of buffering it all. */
async function readRaw(ctx: Context, maxBytes: number): Promise<Buffer> {
  const declared = Number(ctx.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(`The request body is ${declared} bytes; the limit is ${maxBytes}.`);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of ctx.req) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      size += buf.length;
      if (size > maxBytes) throw tooLarge(`The request body is larger than the limit of ${maxBytes} bytes.`);
      chunks.push(buf);
    }
  } catch (err) {
    if (err instanceof QuorumError) throw err;
    throw invalid('The request body could not be read.');
  }
  return Buffer.concat(chunks);
}

/** The JSON body, any JSON value (an MCP batch is an array). Not UTF-8 or not JSON → 400 `invalid_request`. */
export async function readJson(ctx: Context, maxBytes: number = MAX_BODY_BYTES): Promise<unknown> {
  const raw = await readRaw(ctx, maxBytes);
  if (raw.length === 0) throw invalid('The request body is empty; send a JSON object.');
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw invalid('The request body is not valid UTF-8.');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw invalid(`The request body is not valid JSON: ${err instanceof Error ? err.message : 'parse error'}.`);
  }
}

/**
 * The JSON body as an object. Not UTF-8, not JSON, or JSON that is not an object → 400 `invalid_request`
 * with the reason; the field-level checks are the schemas' job.
 */
export async function readJsonObject(ctx: Context, maxBytes: number = MAX_BODY_BYTES): Promise<Record<string, unknown>> {
  const value = await readJson(ctx, maxBytes);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(
      `The request body must be a JSON object, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}.`,
    );
  }
  return value as Record<string, unknown>;
}
