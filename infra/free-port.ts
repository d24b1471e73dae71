import fs from 'node:fs';
import net from 'node:net';

/** The lowest port handed out: below it sit the ports people run services on (5432, 7233, 8080, …). */
const LOWEST = 20_000;
/** IANA's dynamic range, which the kernel's ephemeral range is where Linux does not say otherwise. */
const IANA_EPHEMERAL: [number, number] = [49_152, 65_535];

/** The range the kernel gives outgoing connections and `listen(0)` their ports from. */
export function ephemeralRange(): [number, number] {
  try {
    const [low, high] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low <= high) return [low, high];
  } catch {
    // Not Linux: the IANA range below.
  }
  return IANA_EPHEMERAL;
}

/** Whether nothing listens on `port` on loopback now (a bind succeeds). */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

const handedOut = new Set<number>();

/**
 * A port free now on loopback, for a server started later (Postgres, then Temporal, seconds apart). Drawn outside the
 * kernel's ephemeral range: a port from `listen(0)` is one any outgoing connection of the machine may take before our
 * server binds it (CI, 2026-12-03: Temporal's frontend "bind: address already in use" on a port picked that way while
 * Postgres started). Outside that range only another picker can take it; never the same one twice in this process.
 */
export async function freePort(): Promise<number> {
  const [low, high] = ephemeralRange();
  const ranges = [
    [LOWEST, Math.min(low, 65_536) - 1],
    [Math.max(high + 1, LOWEST), 65_535],
  ].filter(([from, to]) => from <= to);
  const size = ranges.reduce((n, [from, to]) => n + to - from + 1, 0);
  for (let attempt = 0; attempt < 100 && size > 0; attempt++) {
    const port = nthPort(ranges, Math.floor(Math.random() * size));
    if (handedOut.has(port) || !(await portFree(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port on 127.0.0.1 outside the ephemeral range ${low}-${high} after 100 tries`);
}

/** The `offset`th port of the ranges laid end to end. */
function nthPort(ranges: number[][], offset: number): number {
  for (const [from, to] of ranges) {
    if (offset <= to - from) return from + offset;
    offset -= to - from + 1;
  }
  throw new RangeError(`offset ${offset} past the ranges`);
}
