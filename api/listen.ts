import type Koa from 'koa';
import type { Server, ServerResponse } from 'node:http';

/**
 * Idle keep-alive connections stay open longer than clients and load balancers keep theirs (undici 4 s, AWS ALB
 * 60 s), so a client never reuses a connection the server is closing at that instant ("other side closed"). Node's
 * 5 s default lost that race; headers get a second more than keep-alive, as Node requires.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
export const HEADERS_TIMEOUT_MS = 66_000;

/** Responses not yet ended, per server from `listen`: what `drain` waits for. */
const inFlight = new WeakMap<Server, Set<ServerResponse>>();

export function listen(app: Koa, port: number, host?: string): Server {
  const server = app.listen(port, host);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  const responses = new Set<ServerResponse>();
  inFlight.set(server, responses);
  server.on('request', (_req, res: ServerResponse) => {
    responses.add(res);
    res.once('close', () => responses.delete(res));
    // A request that reached a draining server on a connection it already had.
    if (!server.listening) closeAfter(server, res);
  });
  return server;
}

/** The connection carrying `res` ends with it: the client is told so while headers can still say it. */
function closeAfter(server: Server, res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('connection', 'close');
  // A response already under way (a stream) cannot say so; its connection is closed once it is idle.
  res.once('close', () => server.closeIdleConnections());
}

/**
 * Graceful stop: new connections are refused at once, requests in flight get up to `graceMs` to finish, then
 * whatever is still open is cut off. Resolves with how many requests were cut off (0: every one finished).
 */
export function drain(server: Server, graceMs: number): Promise<number> {
  const responses = inFlight.get(server);
  if (!responses) throw new Error('drain: not a server from listen()');
  return new Promise((resolve) => {
    const deadline = setTimeout(() => {
      const cut = responses.size;
      server.closeAllConnections();
      resolve(cut);
    }, graceMs);
    // close() stops listening and, on Node ≥ 19, closes keep-alive connections with no request at once.
    server.close(() => {
      clearTimeout(deadline);
      resolve(0);
    });
    for (const res of responses) closeAfter(server, res);
  });
}
