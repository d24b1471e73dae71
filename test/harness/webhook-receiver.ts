import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback webhook receiver for the signed deliveries' tests (run callbacks, account events), and the receiver's
 * side of the signature check, written from the documentation with node:crypto alone (Stripe's scheme).
 */

export interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the receiver answers next on a path: a status, or a promise of one (a response the test holds back). */
export type Answer = number | Promise<number>;

/** A loopback receiver: records every delivery per path and answers each from its queue (then 200). */
export class Receiver {
  readonly deliveries = new Map<string, Delivery[]>();
  readonly answers = new Map<string, Answer[]>();
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '';
        const seen = this.deliveries.get(path) ?? [];
        seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        this.deliveries.set(path, seen);
        void this.answer(res, this.answers.get(path)?.shift() ?? 200);
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async answer(res: ServerResponse, answer: Answer): Promise<void> {
    res.statusCode = await answer;
    res.end();
  }

  of(path: string): Delivery[] {
    return this.deliveries.get(path) ?? [];
  }

  async until(path: string, n: number, deadlineMs = 60_000): Promise<Delivery[]> {
    const until = Date.now() + deadlineMs;
    while (this.of(path).length < n) {
      if (Date.now() > until) throw new Error(`${path}: ${this.of(path).length} deliveries, waited for ${n}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return this.of(path);
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** The receiver's side of Stripe's scheme, written from the documentation: HMAC-SHA256 of `<t>.<body>`. */
export function verifies(d: Delivery, secret: string): boolean {
  const header = String(d.headers['quorum-signature']);
  const fields = Object.fromEntries(header.split(',').map((p) => p.split('=') as [string, string]));
  const expected = createHmac('sha256', secret).update(`${fields.t}.${d.body}`).digest('hex');
  return fields.v1 === expected && Math.abs(Date.now() / 1000 - Number(fields.t)) <= 300;
}
