import type { KeyPrincipal } from './principal';
import { listModesForOrg } from '../db/repositories/modes';
import { listedCertifications, type ModeCertification } from '../db/repositories/certifications';
import { keyAllowsMode } from '../domain/api-keys';
import type { ArmSummary } from '../domain/equal-cost';
import type { ModeConfig, ModeRecord } from '../domain/modes';
import { seatingNow, simulatedFor, type TierSeating } from '../domain/seating';
import { callSeatingContext } from '../engines/seating-context';
import type { TierRates } from '../domain/estimate';
import type { OperationDeps } from './deps';
import { planPermitsMode } from '../domain/plan-rules';
import { callerCeilingMicros, ownKeyFamilies, ratesOf, runEvidenceOf } from './estimate';

export interface ModelView {
  mode: ModeRecord;
  /**
   * When the mode's id (and ticker) was first saved (`modes.created_at`): OpenAI's `created`. Stable: a new version of
   * the panel keeps it, as an OpenAI model alias keeps its own date while the snapshot behind it moves.
   */
  created: Date;
  rates: TierRates;
  /** null: no per-call ceiling (a connected app's call on a plan). */
  ceilingMicros: number | null;
  /** Who would answer this caller's call now, per tier: planned exactly as the call's seats are. */
  seating: TierSeating[];
  /** Families that would receive this caller's prompt now: every engine of the seating's chains, and a classifier model. */
  providerFamilies: string[];
  /** Designed engines a simulated engine would answer for now; empty in production (no stand-in ever runs there). */
  simulatedEngines: string[];
  /** Why they are simulated: a test key runs on `sim` engines everywhere; a live key only where no key is configured. */
  simulatedBecause: 'test_key' | 'no_credentials';
  /**
   * The listed certification of the configuration of the version this caller calls, with every attempt on it; null
   * when it has none: a certification measured its panel, so an older release's verdict says nothing of this one
   * (docs/api-extensions.md). A simulated one only for its own organisation.
   */
  certification: ModeCertification | null;
  /**
   * The equal-cost arms of the newest live run of this version whose coverage was met (issue 39 item 2): whether the
   * panel beat the same money spent on its best engine; null when no such run measured them.
   */
  evidence: { runId: string; arms: ArmSummary[] } | null;
}

/** The seating's families, and the classifier's when its model runs here (else the heuristic classifies, no provider). */
function familiesNow(config: ModeConfig, seating: readonly TierSeating[], deps: OperationDeps): string[] {
  const classifier = config.staff.classifier?.engine;
  const classifierFamily = classifier && deps.engines.isAvailable(classifier) ? deps.engines.find(classifier)?.family : undefined;
  return [...new Set([...seating.flatMap((t) => t.families), ...(classifierFamily ? [classifierFamily] : [])])];
}

/**
 * The modes the organisation is entitled to, narrowed to those this key may call (a connected app: those the
 * person's plan permits, with no per-call ceiling); each with who would answer this caller's call now, planned by the
 * call's own seat planning (`callSeatingContext`, `seatingFor`): a designed engine with no key here shows the real
 * backup that would answer for it, a `sim` engine only where one would, so a listing never passes off simulated
 * answers as a real model's nor hides the real model that answers.
 */
export async function listModels(deps: OperationDeps, auth: KeyPrincipal): Promise<ModelView[]> {
  const { db, form } = deps;
  const [entitled, ownFamilies] = await Promise.all([listModesForOrg(db, auth.orgId), ownKeyFamilies(db, auth)]);
  const modes = entitled.filter(
    (m) =>
      (keyAllowsMode(auth.allowedModes, m.id) || keyAllowsMode(auth.allowedModes, m.ticker)) &&
      (!auth.app || planPermitsMode(auth.app.plan, m)),
  );
  const simOnly = auth.keyKind === 'test';
  const ctx = callSeatingContext(deps.engines, { ownFamilies, simOnly }, deps.config);
  // One query for every listed mode.
  const certifications = await listedCertifications(
    db,
    modes.map((m) => ({ modeId: m.id, version: m.version })),
    auth.orgId,
  );
  return Promise.all(
    modes.map(async (mode) => {
      const seating = seatingNow(mode.config, ctx);
      const latest = await runEvidenceOf(db, mode);
      return {
        mode,
        created: mode.createdAt,
        rates: await ratesOf(db, mode),
        ceilingMicros: callerCeilingMicros(form, auth, mode, undefined),
        seating,
        providerFamilies: familiesNow(mode.config, seating, deps),
        simulatedEngines: simulatedFor(seating),
        simulatedBecause: simOnly ? 'test_key' : 'no_credentials',
        certification: certifications.get(mode.id) ?? null,
        evidence: latest?.summary.equalCost ? { runId: latest.runId, arms: latest.summary.equalCost } : null,
      };
    }),
  );
}
