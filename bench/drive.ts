import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';

/**
 * The HTTP load of bench/load.ts, shared by every service it measures (Quorum's API, the LiteLLM gateway): autocannon
 * on 127.0.0.1, bounded in count and time, each call with its own tag (which the loopback engine logs, so its served
 * time can be taken off the call's) and its own key.
 */

/** One answered call. */
export interface Call {
  tag: string;
  key: string;
  status: number;
  ms: number;
  /** When it was sent and answered, on this process's `performance.now()` clock. */
  sentAt: number;
  answeredAt: number;
}

export interface DriveOptions {
  url: string;
  path: string;
  concurrency: number;
  calls: number;
  /** Stops the phase after this long, whatever is left. */
  maxS: number;
  headers: Record<string, string>;
  /** The call's body and its own headers, from its tag and key. */
  request(tag: string, key: string): { body: string; headers?: Record<string, string> };
}

interface CallContext {
  tag?: string;
  key?: string;
  sentAt?: number;
}

// Tags are unique across phases and services: they share one loopback engine and its log.
let seq = 0;

/** Drives one phase; `onCall` sees each answer with its body, in order. */
export function drive(opts: DriveOptions, onCall: (call: Call, body: string) => void): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: opts.url,
        method: 'POST',
        connections: opts.concurrency,
        amount: opts.calls,
        timeout: opts.maxS,
        // autocannon answers at its next sample tick after the last call (1 s by default): a phase of 2 s would
        // read as up to 3 s. At 20 ms its end is the last call's, within 20 ms.
        sampleInt: 20,
        headers: { 'content-type': 'application/json', ...opts.headers },
        requests: [
          {
            setupRequest: (req, context): autocannon.Request => {
              const ctx = context as CallContext;
              ctx.tag = `t${seq++}`;
              ctx.key = randomUUID();
              ctx.sentAt = performance.now();
              const { body, headers } = opts.request(ctx.tag, ctx.key);
              return { ...req, path: opts.path, headers: { ...req.headers, ...headers }, body };
            },
            onResponse: (status, body, context): void => {
              const ctx = context as CallContext;
              const [sentAt, answeredAt] = [ctx.sentAt ?? 0, performance.now()];
              onCall({ tag: ctx.tag ?? '', key: ctx.key ?? '', status, ms: answeredAt - sentAt, sentAt, answeredAt }, body);
            },
          },
        ],
      },
      (err: unknown, result: autocannon.Result) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(result)),
    );
    setTimeout(() => instance.stop(), opts.maxS * 1000).unref();
  });
}

/** Calls answered by status, as `{ '200': n }`. */
export function statusCounts(calls: readonly { status: number }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of calls) out[String(c.status)] = (out[String(c.status)] ?? 0) + 1;
  return out;
}

/** Engine calls that ran side by side (a round's seats): when the first started and the last ended, and the longest. */
interface Stage {
  start: number;
  end: number;
  longestMs: number;
}

/**
 * A call's engine calls grouped into stages from the intervals the loopback served it: calls that start before every
 * earlier one has ended ran side by side (a round's seats), a call that starts after that depends on them (the judge,
 * the next round).
 */
function stagesOf(intervals: readonly [number, number][]): Stage[] {
  const stages: Stage[] = [];
  for (const [s, e] of [...intervals].sort((a, b) => a[0] - b[0])) {
    const stage = stages[stages.length - 1];
    if (!stage || s >= stage.end) stages.push({ start: s, end: e, longestMs: e - s });
    else {
      stage.end = Math.max(stage.end, e);
      stage.longestMs = Math.max(stage.longestMs, e - s);
    }
  }
  return stages;
}

/**
 * The engines' critical path of one call: the sum of each stage's longest call; a seat started late because our
 * worker was busy counts as ours, not the engine's.
 */
export function criticalPathMs(intervals: readonly [number, number][]): number {
  return stagesOf(intervals).reduce((sum, stage) => sum + stage.longestMs, 0);
}

/**
 * Where a call's overhead (its latency less the engines' critical path) lay on its timeline, from the client's send
 * and answer and the loopback's served intervals, all on this process's clock. The four add up to the overhead:
 *   - head: sent until its first engine call (the API, the start, the first steps, their dispatch);
 *   - gaps: a stage's last engine answer until the next stage's first call (the worker between steps);
 *   - stagger: inside a stage, calls started or answered apart (its span less its longest call);
 *   - tail: the last engine answer until the client has the response (settle, the workflow's end, the API's answer).
 */
export interface OverheadParts {
  headMs: number;
  gapsMs: number;
  staggerMs: number;
  tailMs: number;
}

export function overheadParts(sentAt: number, answeredAt: number, intervals: readonly [number, number][]): OverheadParts | null {
  const stages = stagesOf(intervals);
  const first = stages[0];
  const last = stages[stages.length - 1];
  if (!first || !last) return null;
  let gapsMs = 0;
  for (let i = 1; i < stages.length; i++) gapsMs += stages[i].start - stages[i - 1].end;
  return {
    headMs: first.start - sentAt,
    gapsMs,
    staggerMs: stages.reduce((sum, stage) => sum + (stage.end - stage.start - stage.longestMs), 0),
    tailMs: answeredAt - last.end,
  };
}
