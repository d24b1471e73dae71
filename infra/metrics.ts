import { timingSafeEqual } from 'node:crypto';
import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Buckets for anything a deliberation waits on, in seconds: fine below a second, where Quorum's own overhead lives
 * (DESIGN §13), and out to minutes, where slow engines and critique rounds put whole calls.
 */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** A registry for one process, with Node's own metrics (CPU, resident memory, event-loop lag, heap). */
export function processRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * `/metrics` carries no bearer key of a caller: it is meant for the scrape network only. With QUORUM_METRICS_TOKEN set
 * a scraper must also send `Authorization: Bearer <token>`; compared in constant time.
 */
export function metricsAuthorised(authorization: string | undefined, token: string | undefined): boolean {
  if (!token) return true;
  const given = Buffer.from(authorization ?? '');
  const expected = Buffer.from(`Bearer ${token}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
