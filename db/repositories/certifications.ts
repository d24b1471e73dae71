import type { Tier } from '../../domain/modes';
import type { RunSummary } from '../../domain/run-summary';
import type { BucketCounts, RunState } from '../../domain/runs';
import { attemptAlpha, attemptVerdict, type CertificationVerdict, type Interval } from '../../domain/statistics';
import type { DbOrTrx } from './shared';

/**
 * Certification attempts on a mode configuration (issue 38 item 3) and the certification a listing shows.
 *
 * An attempt is a certification run, by the same organisation (only a mode's owner certifies it) with a key of the
 * same kind (a test key's simulated attempts are counted apart, and shown only to that organisation), on any of its
 * mode versions whose `mode_versions.config_hash` is the configuration's (a new version or a new mode with the same
 * configuration does not start the count again), in any state except a launch that never started (`failed` with `launch_failed` or `reconciliation_required`: no question was
 * asked, nothing was kept). Running, cancelled, failed and incomplete runs count: an owner could otherwise watch a
 * run's judged questions and cancel the ones going badly. Attempts are numbered by launch, (created_at, id), so a
 * run's number is fixed when it is launched and an earlier launch still running counts before it.
 */

/** The SQL condition "run `r` is an attempt" (the table aliased `r`). */
const IS_ATTEMPT =
  "r.kind = 'certification' and not (r.state = 'failed' and coalesce(r.error_code, '') in ('launch_failed', 'reconciliation_required'))";

/** Which attempt on its configuration this certification run is, from 1. */
export async function certificationAttemptNumber(db: DbOrTrx, runId: string): Promise<number> {
  const result = (await db.raw(
    `select count(*) as count
       from runs me
       join mode_versions mv on mv.mode_id = me.mode_id and mv.version = me.mode_version
       join mode_versions v on v.config_hash = mv.config_hash
       join runs r on r.mode_id = v.mode_id and r.mode_version = v.version
      where me.id = ? and ${IS_ATTEMPT}
        and r.key_mode = me.key_mode and r.org_id = me.org_id
        and (r.created_at, r.id) <= (me.created_at, me.id)`,
    [runId],
  )) as { rows: { count: string }[] };
  return Math.max(1, Number(result.rows[0]?.count ?? 0));
}

/** One attempt as a listing shows it. */
export interface CertificationAttempt {
  runId: string;
  attempt: number;
  state: RunState;
  /** Null while it runs, and when it ended without a verdict (incomplete, failed, cancelled). */
  verdict: CertificationVerdict | null;
  /** The α the attempt was held to, α_k = 0.02·6/(π²k²). */
  alpha: number;
  /** The run's plain 95% interval and its one-sided bound at `alpha`; null without a verdict. */
  interval: Interval | null;
  adjustedLowerBound: number | null;
  launchedAt: Date;
  finishedAt: Date | null;
  modeVersion: number;
}

/** A mode version's certification as callers see it (`/v1/models`, `list_modes`, the console's mode pages). */
export interface ModeCertification {
  modeId: string;
  runId: string;
  verdict: CertificationVerdict;
  /** The plain 95% interval of the win rate and its lower bound; null in a summary without one. */
  interval: Interval | null;
  lowerBound: number | null;
  /** The listed attempt's number, α and bound at α: the certified rung reads the bound at α. */
  attempt: number;
  alpha: number;
  adjustedLowerBound: number | null;
  completedAt: Date;
  modeVersion: number;
  configHash: string;
  /** What was certified: the tiers its questions were asked at and where they came from. */
  tiers: Tier[];
  questionSet: { source: 'generated' | 'imported'; id: string | null; counts: BucketCounts };
  /** A test key's run: answered on `sim` engines, it certifies nothing (DESIGN §10); shown only to its organisation. */
  simulated: boolean;
  /** Every attempt on the configuration of this kind (live, or the viewer's simulated ones), in launch order. */
  attempts: CertificationAttempt[];
}

interface AttemptRow {
  id: string;
  org_id: string;
  mode_id: string;
  mode_version: number;
  key_mode: 'live' | 'test';
  state: RunState;
  created_at: Date;
  finished_at: Date | null;
  config_hash: string;
  spec: { tiers?: Tier[]; questionSetId?: string | null; counts?: BucketCounts };
  summary: RunSummary | null;
  attempt: string;
}

/**
 * The attempt's verdict as it was written at its end (with its number and α), or for a summary written before
 * attempts were counted, the plain ladder's verdict it was listed with then.
 */
function attemptOf(r: AttemptRow): CertificationAttempt {
  const s = r.summary;
  const number = s?.attempt?.attempt ?? Number(r.attempt);
  const w = s?.overall?.winRate ?? null;
  const verdict = s?.verdict ?? null;
  // An older summary's bound at α is computed as its verdict would be now; a row without a standard error has none.
  const adjusted =
    s?.attempt?.adjustedLowerBound ?? (w && typeof w.standardError === 'number' ? attemptVerdict(w, number).adjustedLowerBound : null);
  return {
    runId: r.id,
    attempt: number,
    state: r.state,
    verdict,
    alpha: s?.attempt?.alpha ?? attemptAlpha(number),
    interval: verdict && w ? w.interval : null,
    adjustedLowerBound: verdict === null ? null : adjusted,
    launchedAt: r.created_at,
    finishedAt: r.finished_at,
    modeVersion: r.mode_version,
  };
}

/**
 * The listed attempt: the latest that certified, else the latest with a verdict. By the α spent across attempts, at
 * a true win rate of 0.5 any attempt certifies with probability at most Σα_k ≤ 2.5%, so listing any certified
 * attempt keeps the false-certification rate there; a later attempt that did not certify does not hide it.
 */
function listedOf(attempts: readonly CertificationAttempt[]): CertificationAttempt | undefined {
  const judged = attempts.filter((a) => a.verdict !== null && a.state === 'completed');
  return judged.filter((a) => a.verdict === 'certified').at(-1) ?? judged.at(-1);
}

/**
 * Every attempt of these owners on these configurations, live, or simulated when the owner is `viewerOrgId`, in
 * launch order, numbered within (configuration, owner, kind).
 */
async function attemptRows(
  db: DbOrTrx,
  owned: readonly { configHash: string; orgId: string }[],
  viewerOrgId: string,
): Promise<AttemptRow[]> {
  return (await db('runs as r')
    .join('mode_versions as v', function () {
      this.on('v.mode_id', '=', 'r.mode_id').andOn('v.version', '=', 'r.mode_version');
    })
    .whereRaw(IS_ATTEMPT)
    .whereIn(
      ['v.config_hash', 'r.org_id'],
      owned.map((o) => [o.configHash, o.orgId]),
    )
    .where((q) => q.where('r.key_mode', 'live').orWhere('r.org_id', viewerOrgId))
    .orderBy([{ column: 'r.created_at' }, { column: 'r.id' }])
    .select(
      'r.id',
      'r.org_id',
      'r.mode_id',
      'r.mode_version',
      'r.key_mode',
      'r.state',
      'r.created_at',
      'r.finished_at',
      'r.spec',
      'r.summary',
      'v.config_hash',
      // The same numbering as certificationAttemptNumber's: live attempts together, a test key's per organisation.
      db.raw('row_number() over (partition by v.config_hash, r.org_id, r.key_mode order by r.created_at, r.id) as attempt'),
    )) as AttemptRow[];
}

/** Every attempt on the configuration of this certification run, of its kind (live, or its organisation's simulated). */
export async function attemptsBeside(
  db: DbOrTrx,
  run: { modeId: string; modeVersion: number; keyKind: 'live' | 'test'; orgId: string },
): Promise<CertificationAttempt[]> {
  const v = (await db('mode_versions').where({ mode_id: run.modeId, version: run.modeVersion }).first('config_hash')) as
    { config_hash: string } | undefined;
  if (!v) return [];
  const rows = await attemptRows(db, [{ configHash: v.config_hash, orgId: run.orgId }], run.orgId);
  return rows.filter((r) => r.key_mode === run.keyKind).map(attemptOf);
}

/**
 * For each of these mode versions, the certification a caller from `viewerOrgId` sees: over every attempt of the mode's
 * owner on the version's configuration, live ones listed before simulated ones (a test key's run says nothing of the
 * real panel, so it never hides a live verdict), which only the owner is shown. A mode version with none is absent.
 */
export async function listedCertifications(
  db: DbOrTrx,
  versions: readonly { modeId: string; version: number }[],
  viewerOrgId: string,
): Promise<Map<string, ModeCertification>> {
  if (versions.length === 0) return new Map();
  const hashes = (await db('mode_versions as v')
    .join('modes as m', 'm.id', 'v.mode_id')
    .whereIn(
      ['v.mode_id', 'v.version'],
      versions.map((v) => [v.modeId, v.version]),
    )
    .select('v.mode_id', 'v.config_hash', 'm.org_id')) as { mode_id: string; config_hash: string; org_id: string }[];
  const rows = await attemptRows(
    db,
    hashes.map((h) => ({ configHash: h.config_hash, orgId: h.org_id })),
    viewerOrgId,
  );
  const out = new Map<string, ModeCertification>();
  for (const { mode_id: modeId, config_hash: configHash, org_id: owner } of hashes) {
    const listed = (['live', 'test'] as const)
      .map((keyMode) => {
        const ofKind = rows.filter((r) => r.config_hash === configHash && r.org_id === owner && r.key_mode === keyMode);
        const attempts = ofKind.map(attemptOf);
        const chosen = listedOf(attempts);
        return chosen && { chosen, attempts, row: ofKind.find((r) => r.id === chosen.runId) as AttemptRow };
      })
      .find((x) => x !== undefined);
    if (!listed) continue;
    const { chosen, attempts, row } = listed;
    out.set(modeId, {
      modeId,
      runId: chosen.runId,
      verdict: chosen.verdict as CertificationVerdict,
      interval: chosen.interval,
      lowerBound: chosen.interval?.low ?? null,
      attempt: chosen.attempt,
      alpha: chosen.alpha,
      adjustedLowerBound: chosen.adjustedLowerBound,
      completedAt: chosen.finishedAt ?? row.created_at,
      modeVersion: row.mode_version,
      configHash,
      tiers: row.spec.tiers ?? ['plus'],
      questionSet: {
        source: row.spec.questionSetId ? 'imported' : 'generated',
        id: row.spec.questionSetId ?? null,
        counts: row.spec.counts ?? { light: 0, medium: 0, hard: 0 },
      },
      simulated: row.key_mode === 'test',
      attempts,
    });
  }
  return out;
}
