import type { Knex } from 'knex';
import pg from 'pg';
import type { AnswerChunk, DeliberationEvent, StoredEvent } from '../../domain/deliberation-events';
import type { DbOrTrx } from './shared';

/** Postgres's channel for "a deliberation stored an event"; the payload is its request id. */
const CHANNEL = 'quorum_deliberation_events';

/**
 * Stores one step event (issue 40 item 2) and tells the listening API processes, in one statement. A step run again
 * (a worker that took over re-runs the engine calls its predecessor finished but had not recorded) writes its index
 * again: the first write stands, so what a stream sent is what a resumed one sends.
 */
export async function recordDeliberationEvent(
  db: DbOrTrx,
  input: { requestId: string; index: number; event: DeliberationEvent },
): Promise<void> {
  await db.raw(
    `with stored as (
       insert into deliberation_events (request_id, step, event) values (?, ?, ?::jsonb)
       on conflict do nothing returning request_id)
     select pg_notify(?, request_id) from stored`,
    [input.requestId, input.index, JSON.stringify(input.event), CHANNEL],
  );
}

export async function readDeliberationEvents(db: DbOrTrx, requestId: string): Promise<StoredEvent[]> {
  const rows = (await db('deliberation_events')
    .where({ request_id: requestId })
    .orderBy('step')
    .select('step', 'event', 'recorded_at')) as {
    step: number;
    event: DeliberationEvent;
    recorded_at: Date;
  }[];
  return rows.map((r) => ({ index: r.step, event: r.event, recordedAt: r.recorded_at }));
}

/**
 * Stores one row of the answer at its place and tells the listening API processes, in one statement: a piece, or the
 * result of the call whose pieces it follows (migration 039: `callResult`, its text empty). `unkept`: the organisation
 * keeps no texts (zero retention); `taken`: another writer holds its place (a call thought lost, still writing).
 */
export async function recordAnswerRow(
  db: DbOrTrx,
  input: { orgId: string; requestId: string; step: number; part: number; text: string; callResult?: AnswerCallResult },
): Promise<'stored' | 'unkept' | 'taken'> {
  const { rows } = await db.raw<{ rows: { stored: boolean; unkept: boolean }[] }>(
    `with kept as (select not zero_retention(?) as kept),
     stored as (
       insert into answer_chunks (request_id, step, part, text, call_result)
       select ?, ?, ?, ?, ?::jsonb from kept where kept
       on conflict do nothing returning request_id),
     told as (select pg_notify(?, request_id) from stored)
     select exists (select from told) as stored, not kept as unkept from kept`,
    [input.orgId, input.requestId, input.step, input.part, input.text, input.callResult ? JSON.stringify(input.callResult) : null, CHANNEL],
  );
  const row = rows[0];
  return row?.stored ? 'stored' : row?.unkept ? 'unkept' : 'taken';
}

/**
 * A request's answer pieces, in order (of one step: a call's own, to continue them). The row after a call's pieces
 * that holds its result reads as an empty piece: the parts run unbroken through it to the pieces a later call added.
 */
export async function readAnswerChunks(db: DbOrTrx, requestId: string, step?: number): Promise<AnswerChunk[]> {
  const query = db('answer_chunks').where({ request_id: requestId });
  if (step !== undefined) query.where({ step });
  return (await query.orderBy(['step', 'part']).select('step', 'part', 'text')) as AnswerChunk[];
}

/** Which call wrote the pieces before it (not which execution), and what it returned (its text aside). */
export type AnswerCallResult = { call: string; result: unknown };

/** What is stored at one step of an answer, in part order: pieces, and the results of the calls that wrote them. */
export type AnswerPlaceRow = { part: number; text: string; callResult: AnswerCallResult | null };

export async function readAnswerPlace(db: DbOrTrx, requestId: string, step: number): Promise<AnswerPlaceRow[]> {
  const rows = (await db('answer_chunks').where({ request_id: requestId, step }).orderBy('part').select('part', 'text', 'call_result')) as {
    part: number;
    text: string;
    call_result: AnswerPlaceRow['callResult'];
  }[];
  return rows.map((r) => ({ part: r.part, text: r.text, callResult: r.call_result }));
}

/** Told when a request has stored an event; returns how to stop listening. */
export type Subscribe = (requestId: string, onEvent: () => void) => Promise<() => void>;

/**
 * One LISTEN connection per pool, open while anything listens: a notification reaches every subscriber of its
 * request. A listener that cannot connect, or loses its connection, leaves its subscribers to their own polling.
 */
export function eventSubscriber(db: Knex): Subscribe {
  let existing = subscribers.get(db);
  if (!existing) {
    existing = createSubscriber(db);
    subscribers.set(db, existing);
  }
  return existing;
}

const subscribers = new WeakMap<Knex, Subscribe>();

function createSubscriber(db: Knex): Subscribe {
  const waiting = new Map<string, Set<() => void>>();
  let connection: Promise<pg.Client | undefined> | undefined;
  const config = (db.client as { config: Knex.Config }).config.connection as pg.ClientConfig;
  const open = async (): Promise<pg.Client | undefined> => {
    const client = new pg.Client({ connectionString: config.connectionString, application_name: 'quorum-events' });
    client.on('notification', (n) => {
      for (const f of waiting.get(n.payload ?? '') ?? []) f();
    });
    client.on('error', () => {
      connection = undefined;
      client.end().catch(() => undefined);
    });
    try {
      await client.connect();
      await client.query(`listen ${CHANNEL}`);
      return client;
    } catch {
      connection = undefined;
      await client.end().catch(() => undefined);
      return undefined;
    }
  };
  const size = (): number => [...waiting.values()].reduce((n, s) => n + s.size, 0);
  return async (requestId, onEvent) => {
    const set = waiting.get(requestId) ?? new Set();
    waiting.set(requestId, set);
    set.add(onEvent);
    connection ??= open();
    await connection;
    return () => {
      set.delete(onEvent);
      if (set.size === 0) waiting.delete(requestId);
      if (size() > 0 || !connection) return;
      // Nothing listens any more: the connection closes, so a stopping API has nothing of ours left open.
      const closing = connection;
      connection = undefined;
      void closing.then((c) => c?.end()).catch(() => undefined);
    };
  };
}
