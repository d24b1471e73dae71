import type Router from '@koa/router';
import type { RouteDeps } from '../../http/context';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { modeDetail, type ModeDetail } from '../../../operations/authoring/modes';
import { QuorumError } from '../../../domain/errors';
import type { RunKind } from '../../../domain/runs';
import { workflowIds } from '../../../domain/workflow-ids';
import { memberAuth } from '../../../operations/organisations';
import type { KeyPrincipal } from '../../../operations/principal';
import { launchCertification, launchTestRun, type LaunchOptions, type LaunchView } from '../../../operations/run-launch';
import { parseTestRunRequest } from '../../../operations/requests/runs';
import { consoleAuthoring } from '../console-auth';
import { fieldsOf, text } from '../fields';
import { postedValue, type Spec } from '../mode-fields';
import { ConsoleRefusal, requireOrg } from '../session';
import { countFieldsOf, modePage, type RunsState } from './mode-page';

/**
 * The runs box's routes: a test run or a certification priced (a dry run), then launched at no more than that price,
 * through the same operations as `/v1/tests` and `/v1/certify`.
 */
export function runRoutes(router: Router, deps: RouteDeps): void {
  router.post('/modes/:id/runs/price', runAction(deps, priceRun));
  router.post('/modes/:id/runs/launch', runAction(deps, launchRun));
}

/** What the runs box posted, for the mode of the page it is on. */
interface RunRequest {
  auth: KeyPrincipal;
  kind: RunKind;
  m: ModeDetail;
  body: Spec;
}

/** Prices the run (a dry run), for the runs box to offer its launch. */
async function priceRun(_ctx: Context, deps: RouteDeps, { auth, kind, m, body }: RunRequest): Promise<RunsState['priced']> {
  // The launch draws exactly the questions priced here (the seed), once (the key), at no more than this price.
  const seed = randomBytes(4).readUInt32BE();
  const view = await startRun(deps, auth, kind, m.model, body, true, { seed });
  return { kind, view, seed, key: randomUUID() };
}

/** Launches the priced run and redirects to it (no price to show); a launch form that was not priced here is refused. */
async function launchRun(ctx: Context, deps: RouteDeps, { auth, kind, m, body }: RunRequest): Promise<RunsState['priced']> {
  const { seed, max_price_micros, idempotency_key } = fieldsOf(ctx, {
    seed: text(12),
    max_price_micros: text(16),
    idempotency_key: text(64),
  });
  if (!/^\d{1,10}$/.test(seed) || !/^\d{1,15}$/.test(max_price_micros) || !/^[0-9a-f-]{36}$/.test(idempotency_key))
    throw new ConsoleRefusal(400, 'This launch form is incomplete; price the run again.');
  // The key guards a double submit in both Forms: with the workflow id set, the launch is keyed even in Form A
  // (whose REST launches take no Idempotency-Key), as an advisor quote's approval is.
  const view = await startRun(deps, auth, kind, m.model, body, false, {
    seed: Number(seed),
    maxPriceMicros: Number(max_price_micros),
    idempotencyKey: idempotency_key,
    workflowId: kind === 'test' ? workflowIds.testRun(auth.orgId, idempotency_key) : workflowIds.certification(auth.orgId, idempotency_key),
  });
  if (!view.run) throw new Error('a launch that is not a dry run returns its run');
  ctx.redirect(`/console/runs/${encodeURIComponent(view.run.id)}`);
  return undefined;
}

/** A posted count as the run request takes it: a whole number, or the text as typed (refused with the field named). */
function whole(value: unknown): unknown {
  return typeof value === 'string' && /^\d{1,6}$/.test(value.trim()) ? Number(value) : value;
}

/** The run the runs box asks for, priced (`dryRun`) or launched, through the same operation as `/v1/tests` and `/v1/certify`. */
async function startRun(
  deps: RouteDeps,
  auth: KeyPrincipal,
  kind: RunKind,
  model: string,
  body: Spec,
  dryRun: boolean,
  opts: LaunchOptions,
): Promise<LaunchView> {
  if (kind === 'certification') return launchCertification(deps, auth, { model, dryRun, ...opts });
  const { group, fields } = countFieldsOf(deps.form);
  const counts = Object.fromEntries(fields.map((f) => [f.split('.')[1], whole(postedValue(body, f))]));
  const request = parseTestRunRequest(deps.form, { model, [group]: counts, dry_run: dryRun });
  return launchTestRun(deps, auth, { request, ...opts });
}

/** Prices or launches from the runs box; a refusal shows there (a count beside its field), with its code. */
function runAction(
  deps: RouteDeps,
  act: (ctx: Context, deps: RouteDeps, run: RunRequest) => Promise<RunsState['priced']>,
): (ctx: Context) => Promise<void> {
  return async (ctx) => {
    const { user } = requireOrg(ctx);
    const body = ctx.request.body as Spec;
    const kind: RunKind = body.kind === 'certification' ? 'certification' : 'test';
    const a = consoleAuthoring(deps, user);
    const m = await modeDetail(a.deps, a.author, ctx.params.id);
    const { group, fields } = countFieldsOf(deps.form);
    const counts = Object.fromEntries(fields.map((f) => [f, postedValue(body, f) ?? '']));
    let runs: RunsState;
    try {
      const priced = await act(ctx, deps, { auth: await memberAuth(deps, a.author), kind, m, body });
      // No price: the run was launched and the answer is the redirect to it.
      if (!priced) return;
      runs = { counts, priced };
    } catch (err) {
      if (!(err instanceof QuorumError)) throw err;
      ctx.status = err.spec.status;
      const refusals = err.param?.startsWith(group) ? [{ code: err.code, message: err.message, path: err.param }] : [];
      runs = { counts, refusals, problem: refusals.length > 0 ? undefined : err };
    }
    await modePage(ctx, deps, user, m.mode_id, { runs });
  };
}
