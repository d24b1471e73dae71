import type Koa from 'koa';
import type { Server } from 'node:http';

/**
 * Idle keep-alive connections stay open longer than clients and load balancers keep theirs (undici 4 s, AWS ALB
 * 60 s), so a client never reuses a connection the server is closing at that instant ("other side closed"). Node's
 * 5 s default lost that race; headers get a second more than keep-alive, as Node requires.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
export const HEADERS_TIMEOUT_MS = 66_000;

export function listen(app: Koa, port: number, host?: string): Server {
  const server = app.listen(port, host);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  return server;
}
