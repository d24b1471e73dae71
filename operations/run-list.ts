import { listedCertifications, type ModeCertification } from '../db/repositories/certifications';
import type { StoreDeps, TemporalOptional } from './deps';
import { answeredCounts, findRun, getRun, listRuns, type RunFilter, type RunRecord } from '../db/repositories/runs';
import type { Scope } from '../domain/api-keys';
import { QuorumError } from '../domain/errors';
import { BATCH_STATES, type BatchState, type RunKind, type RunProgress, type RunState } from '../domain/runs';
import { isStorableText } from '../domain/storable-text';
import { runProgress } from '../starters/runs';
import { requireScope } from './checks';
import { orgActedOn, type Principal } from './principal';
import { invalidParam, pageLimit, singleParam, type PageSize } from './query-params';
import { viewOf, type RunView } from './run-poll';

/**
 * Listing an organisation's runs (GET /v1/runs, MCP `list_runs`, `quorum run list`; issue 28 item 1): newest first,
 * a page at a time, each run as its poll shows it.
 */

/** The scope that reads each kind of run, as its poll requires it. */
export const RUN_SCOPES: Readonly<Record<RunKind, Scope>> = { test: 'tests', certification: 'certify' };
/** The operator's CLI reads every kind. */
export const EVERY_RUN_SCOPE: readonly Scope[] = Object.values(RUN_SCOPES);

/** A page holds at most this many runs (each read as a poll reads it), and this many unless asked. */
export const RUN_PAGE: PageSize = { max: 100, default: 20 };

/** Whose runs, and the scopes that say which kinds it reads: a key's own, or every kind for the operator and console. */
export interface RunReader {
  orgId: string;
  scopes: readonly Scope[];
}

export interface RunListQuery {
  limit: number;
  /** The last batch id of the page before. */
  after?: string;
  kind?: RunKind;
  model?: string;
  state?: BatchState;
}

export interface RunPage {
  views: RunView[];
  /** More runs follow: the last one's id is the next page's `after`. */
  hasMore: boolean;
}

/** The route names (`test`, `certify`) and the batch's own `kind` (`certification`). */
const KIND_NAMES: Readonly<Record<string, RunKind>> = { test: 'test', certify: 'certification', certification: 'certification' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const refuse = (param: string, message: string): never => {
  throw invalidParam(param, message);
};

/** The query of `GET /v1/runs` (and the MCP tool's arguments, as text): every bad value is 400 `invalid_request`. */
export function parseRunListQuery(query: Record<string, unknown>): RunListQuery {
  const limit = pageLimit(singleParam(query, 'limit'), RUN_PAGE);
  const after = singleParam(query, 'after');
  if (after !== undefined && !UUID.test(after)) refuse('after', '`after` must be a batch id (a uuid): the `last_id` of the page before.');
  const kindText = singleParam(query, 'kind');
  if (kindText !== undefined && !Object.hasOwn(KIND_NAMES, kindText)) refuse('kind', '`kind` must be `test` or `certify`.');
  const state = singleParam(query, 'state');
  if (state !== undefined && !(BATCH_STATES as readonly string[]).includes(state))
    refuse('state', `\`state\` must be one of ${BATCH_STATES.join(', ')}.`);
  const model = singleParam(query, 'model');
  // Postgres refuses a NUL in a text comparison: such a name is a bad request, never a 500.
  if (model !== undefined && (model.length === 0 || model.length > 200 || !isStorableText(model)))
    refuse('model', '`model` must be a mode id or ticker.');
  return {
    limit,
    after,
    kind: kindText === undefined ? undefined : KIND_NAMES[kindText],
    model,
    state: state as BatchState | undefined,
  };
}

/** The runs whose state the batch shows as `state`: a row between its charge and its workflow's start is `queued`. */
const rowStates = (state: BatchState): RunState[] => (state === 'queued' ? ['launching', 'queued'] : [state]);

/**
 * A page of the organisation's runs of the kinds the key may read (`tests` reads test runs, `certify`
 * certifications); asking for a kind, or for runs at all, without its scope is 403 `insufficient_scope`.
 */
export async function listOrgRuns(deps: TemporalOptional<'db' | 'form'>, reader: RunReader, query: RunListQuery): Promise<RunPage> {
  const readable = (Object.keys(RUN_SCOPES) as RunKind[]).filter((k) => reader.scopes.includes(RUN_SCOPES[k]));
  if (query.kind) requireScope(reader, RUN_SCOPES[query.kind]);
  else if (readable.length === 0)
    throw new QuorumError('insufficient_scope', 'Listing runs needs the `tests` scope (test runs) or `certify` (certifications).');
  if (query.after !== undefined && !(await findRun(deps.db, reader.orgId, query.after)))
    refuse('after', '`after` names no run of this organisation: pass the `last_id` of the page before.');
  const filter: RunFilter = {
    kinds: query.kind ? [query.kind] : readable,
    model: query.model,
    states: query.state && rowStates(query.state),
    after: query.after,
  };
  // One more than the page says whether another follows.
  const rows = await listRuns(deps.db, reader.orgId, query.limit + 1, filter);
  const page = rows.slice(0, query.limit);
  return {
    views: await Promise.all(page.map((run) => viewOf(deps, reader.orgId, run))),
    hasMore: rows.length > query.limit,
  };
}

/** The organisation's latest runs with how many questions each has answered, as the console's list shows them. */
export async function recentRuns(
  deps: StoreDeps,
  principal: Principal,
  limit: number,
): Promise<{ runs: RunRecord[]; answered: Map<string, number> }> {
  const runs = await listRuns(deps.db, orgActedOn(principal), limit);
  const answered = await answeredCounts(
    deps.db,
    runs.map((r) => r.id),
  );
  return { runs, answered };
}

/** One run of the organisation; undefined for another organisation's, exactly like an id that never existed. */
export async function runOf(deps: StoreDeps, principal: Principal, runId: string): Promise<RunRecord | undefined> {
  return findRun(deps.db, orgActedOn(principal), runId);
}

/** The listed certification of each released mode version, as the principal's organisation sees it. */
export async function certificationsOf(
  deps: StoreDeps,
  principal: Principal,
  versions: readonly { modeId: string; version: number }[],
): Promise<Map<string, ModeCertification>> {
  return listedCertifications(deps.db, versions, orgActedOn(principal));
}

/** Any organisation's run, for the operator (`batch_not_found` when none has this id). */
export async function anyRun(deps: StoreDeps, _principal: Principal & { via: 'operator' }, runId: string): Promise<RunRecord> {
  return getRun(deps.db, runId);
}

/** A run's progress per bucket, from its workflow while it runs and from the database once it has ended. */
export async function progressOf(deps: TemporalOptional<'db'>, run: RunRecord): Promise<RunProgress> {
  return runProgress(deps.client, deps.db, run);
}
