import type { Context } from 'koa';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Db } from '../../db/knex';
import { recordEstimate } from '../../db/repositories/limits';
import { recordedCallStats } from '../../db/repositories/requests';
import { classifyHeuristic } from '../../domain/classifier';
import { quote, tierRates, type TierRates } from '../../domain/estimate';
import { TIERS, type ModeRecord } from '../../domain/modes';
import type { TokenPrices } from '../../domain/pricing';
import { findEngine } from '../../engines/catalog';
import { readJsonObject } from '../body';
import { checkInputTokens, resolveMode, withConcurrencySlot } from '../middleware/checks';
import { authOf, startedAt } from '../middleware/gate';
import { parseRequest } from '../schemas/common';
import type { RouteDeps } from './context';

export function newEstimateId(): string {
  return `est_${randomBytes(12).toString('hex')}`;
}

export function catalogPrices(engineId: string): TokenPrices | undefined {
  const spec = findEngine(engineId);
  return spec && { inputUsdPerMtok: spec.inputUsdPerMtok, outputUsdPerMtok: spec.outputUsdPerMtok };
}

/** The mode's fee rate per tier, from its recorded calls (one query per tier, in parallel). */
export async function ratesOf(db: Db, mode: ModeRecord): Promise<TierRates> {
  const stats = await Promise.all(TIERS.map((tier) => recordedCallStats(db, mode.id, tier)));
  return tierRates(mode.config, { experience: stats[0], plus: stats[1], pro: stats[2] });
}

/**
 * POST /v1/estimate: the same classifier as a real call, in process (no workflow), free: it never reads or
 * touches the balance. Subject to the same rate and concurrency limits as a billed call (spec 01).
 */
export function estimate(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const { db, serialiser } = deps;
    const auth = authOf(ctx);
    const requestId = String(ctx.state.requestId);
    const body = parseRequest(serialiser.requests.estimate, await readJsonObject(ctx));
    const mode = await resolveMode(db, serialiser.form, auth, body.model);
    const promptTokens = checkInputTokens(auth, body.messages);
    const tier = body.tier ?? 'plus';
    // Read-only, so it may overlap the slot check; its failure surfaces where it is awaited.
    const ratesRead = ratesOf(db, mode);
    ratesRead.catch(() => undefined);
    ctx.body = await withConcurrencySlot(db, auth, async () => {
      const classifyStart = performance.now();
      const classification = classifyHeuristic(body.messages);
      const classify = Math.round(performance.now() - classifyStart);
      const [rates] = await Promise.all([ratesRead, recordEstimate(db, auth.orgId, requestId)]);
      const q = quote(
        {
          form: serialiser.form,
          config: mode.config,
          tier,
          classification,
          promptTokens,
          rate: rates[tier],
          source: 'service',
          keyCeilingMicros: auth.limits.maxCostMicros === null ? undefined : Number(auth.limits.maxCostMicros),
          requestedCeilingMicros: undefined,
        },
        catalogPrices,
      );
      const total = Math.round(performance.now() - startedAt(ctx));
      return serialiser.estimate({ requestId, model: body.model, mode, classification, tier, rates, quote: q, timing: { total, classify } });
    });
  };
}
