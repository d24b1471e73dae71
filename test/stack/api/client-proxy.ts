import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { startProductWorkers } from '../deliberation/helpers';
import { call, FORMS, startApi, type Api } from './helpers';

/**
 * A pass-through in front of the API that keeps what each client sent and what it got back (issue 53 item 1): the
 * clients under test are given its URL as their base URL and nothing else, and the tests read here the request a
 * client really made (its defaults, the history a second turn carries) and, on a failure, the server's status and body.
 */
export interface Exchange {
  method: string;
  path: string;
  /** The request body as JSON (its raw text when it is not JSON; undefined when empty). */
  request: unknown;
  status: number;
  contentType: string;
  /** `x-request-id`: the call's receipt id where the response names one. */
  requestId: string | null;
  /** The response body's text, in full once the exchange has ended (a stream's events too). */
  response: string;
}

export interface RecordingProxy {
  url: string;
  exchanges: Exchange[];
  close(): Promise<void>;
}

/** Hop-by-hop and framing headers, which each side of the proxy sets for itself. */
const NOT_FORWARDED = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'content-encoding']);

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function recordingProxy(target: string): Promise<RecordingProxy> {
  const exchanges: Exchange[] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    const text = body.toString('utf8');
    let request: unknown = undefined;
    if (text) {
      try {
        request = JSON.parse(text) as unknown;
      } catch {
        request = text;
      }
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !NOT_FORWARDED.has(name)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const exchange: Exchange = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      request,
      status: 0,
      contentType: '',
      requestId: null,
      response: '',
    };
    exchanges.push(exchange);
    let upstream: Response;
    try {
      upstream = await fetch(target + (req.url ?? '/'), { method: req.method, headers, body: body.length > 0 ? body : undefined });
    } catch (err) {
      exchange.status = 599;
      exchange.response = `proxy: ${String(err)}`;
      res.writeHead(502, { 'content-type': 'text/plain' }).end(exchange.response);
      return;
    }
    exchange.status = upstream.status;
    exchange.contentType = upstream.headers.get('content-type') ?? '';
    exchange.requestId = upstream.headers.get('x-request-id');
    const out: Record<string, string> = {};
    upstream.headers.forEach((value, name) => {
      if (!NOT_FORWARDED.has(name)) out[name] = value;
    });
    res.writeHead(upstream.status, out);
    // Streamed through as it arrives: a server-sent event stream reaches the client event by event.
    const decoder = new TextDecoder();
    if (upstream.body) {
      for await (const chunk of upstream.body) {
        exchange.response += decoder.decode(chunk, { stream: true });
        res.write(chunk);
      }
    }
    exchange.response += decoder.decode();
    res.end();
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${String(err)}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The exchanges since `from`, one line each, with the body of each that failed: what a failing client test reports. */
export function describeExchanges(exchanges: readonly Exchange[], from = 0): string {
  return exchanges
    .slice(from)
    .map((e) => {
      const keys =
        e.request && typeof e.request === 'object' && !Array.isArray(e.request) ? ` keys=${Object.keys(e.request).join(',')}` : '';
      const failed = e.status >= 400 ? ` → ${e.response.slice(0, 800)}` : '';
      return `${e.method} ${e.path}${keys} ${e.status}${failed}`;
    })
    .join('\n');
}

/** Awaits a client's call; when it throws, the error says what the client sent and what the server answered. */
export async function viaClient<T>(proxy: RecordingProxy, what: string, run: () => Promise<T>): Promise<T> {
  const from = proxy.exchanges.length;
  try {
    return await run();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new Error(`${what} threw ${message}\nexchanges:\n${describeExchanges(proxy.exchanges, from)}`, { cause: err });
  }
}

/** The `POST` exchanges to `path` since `from` (query string ignored). */
export function posts(proxy: RecordingProxy, path: string, from = 0): Exchange[] {
  return proxy.exchanges.slice(from).filter((e) => e.method === 'POST' && e.path.split('?')[0].endsWith(path));
}

/** The one exchange whose request mentions `marker`, the first of several (a later turn repeats an earlier one's). */
export function exchangeWith(exchanges: readonly Exchange[], marker: string): Exchange {
  const found = exchanges.find((e) => JSON.stringify(e.request ?? '').includes(marker));
  assert.ok(found, `no request mentions ${marker}:\n${describeExchanges(exchanges)}`);
  return found;
}

/**
 * A Responses `input` as the turns it holds, `[role, text]` each: a string is one user turn; a message's content is its
 * text or its text parts joined (`input_text`, `output_text`).
 */
export function turnsOf(input: unknown): [string, string][] {
  if (typeof input === 'string') return [['user', input]];
  assert.ok(Array.isArray(input), JSON.stringify(input));
  return (input as { role?: string; content?: unknown }[]).map((item) => {
    const content = item.content;
    const textOf = (part: unknown): string => String((part as { text?: unknown }).text ?? '');
    return [String(item.role), typeof content === 'string' ? content : Array.isArray(content) ? content.map(textOf).join('') : ''];
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The call's receipt id as the response body names it (`svc.request_id`; in a stream, the last event's response's),
 * else the `x-request-id` header.
 */
export function requestIdOf(exchange: Exchange): string | null {
  const named = (body: unknown): string | undefined => {
    const b = body as { svc?: { request_id?: unknown }; response?: { svc?: { request_id?: unknown } } } | null;
    const id = b?.svc?.request_id ?? b?.response?.svc?.request_id;
    return typeof id === 'string' ? id : undefined;
  };
  const bodies = exchange.contentType.startsWith('text/event-stream')
    ? exchange.response
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => parseJson(line.slice(5)))
        .reverse()
    : [parseJson(exchange.response)];
  for (const body of bodies) {
    const id = named(body);
    if (id) return id;
  }
  return exchange.requestId;
}

export interface ExpressReceipt {
  request_id: string;
  status: string;
  lane: string;
  prompt_tokens: number;
  seats: { role: string; tokens_in: number; tokens_out: number; content: string }[];
}

/**
 * The receipt, with its transcript, of an express-lane call (one seat, whose answer is the answer), read through the
 * API itself (not the proxy), and the answer it records.
 */
export async function expressReceipt(api: Api, key: string, exchange: Exchange): Promise<{ receipt: ExpressReceipt; answer: string }> {
  const requestId = requestIdOf(exchange);
  assert.match(String(requestId), /^req_/, 'the response names its request');
  const got = await call(api, 'GET', `/v1/receipts/${String(requestId)}?include_transcript=true`, { key });
  assert.equal(got.status, 200, JSON.stringify(got.body));
  const receipt = got.body.receipt as unknown as ExpressReceipt;
  assert.equal(receipt.request_id, requestId);
  assert.equal(receipt.lane, 'express', JSON.stringify(receipt));
  assert.equal(receipt.seats.length, 1, 'the express lane asks one seat');
  return { receipt, answer: receipt.seats[0].content };
}

/**
 * For the describe that calls it: the product's workers and each Form's API behind its own recording pass-through,
 * started before its tests and stopped after; a client is given only the proxy's URL.
 */
export function proxiedApis(): { api: (form: 'A' | 'B') => Api; proxy: (form: 'A' | 'B') => RecordingProxy } {
  let workers: { stop(): Promise<void> } | undefined;
  const apis: Partial<Record<'A' | 'B', Api>> = {};
  const proxies: Partial<Record<'A' | 'B', RecordingProxy>> = {};
  before(async () => {
    workers = await startProductWorkers({});
    for (const form of FORMS) {
      apis[form] = await startApi(form);
      proxies[form] = await recordingProxy((apis[form] as Api).url);
    }
  });
  after(async () => {
    for (const proxy of Object.values(proxies)) await proxy?.close();
    for (const api of Object.values(apis)) await api?.close();
    await workers?.stop();
  });
  return { api: (form) => apis[form] as Api, proxy: (form) => proxies[form] as RecordingProxy };
}
