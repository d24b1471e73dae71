import type { Context } from 'koa';
import { Readable } from 'node:stream';
import { runListBody } from '../forms/run-list';
import { readJsonObject } from '../http/body';
import { authOf } from '../http/gate';
import { launchCertification, launchTestRun } from '../../operations/run-launch';
import { cancelOrgRun } from '../../operations/run-cancel';
import { listOrgRuns, parseRunListQuery } from '../../operations/run-list';
import { pollRun } from '../../operations/run-poll';
import { exportQuestions, parseQuestionOptions, questionPage } from '../../operations/run-questions';
import { parseIdempotencyKey } from '../../operations/requests/common';
import { parseBatchId, parseCertifyRequest, parseTestRunRequest } from '../../operations/requests/runs';
import { baseUrlOf, type RouteDeps } from '../http/context';

/** POST /v1/tests: launched, or priced when `dry_run`. */
/**
 * The launch's `Idempotency-Key`: the header is Form B's (spec 02), so Form A ignores it. Without one, the launch
 * derives its key from the request (operations/run-launch.ts), so a retry is the same run in either Form.
 */
function launchKey(deps: RouteDeps, ctx: Context): string | undefined {
  return deps.form === 'B' ? parseIdempotencyKey(ctx.headers['idempotency-key']) : undefined;
}

export function launchTests(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const request = parseTestRunRequest(deps.form, await readJsonObject(ctx));
    const view = await launchTestRun(deps, authOf(ctx), { request, idempotencyKey: launchKey(deps, ctx) });
    ctx.body = deps.serialiser.runs.launch(view, baseUrlOf(ctx));
  };
}

/** POST /v1/certify: 150 questions, three judges, two repeats, $50 flat. */
export function launchCertify(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const request = parseCertifyRequest(await readJsonObject(ctx));
    const view = await launchCertification(deps, authOf(ctx), { ...request, idempotencyKey: launchKey(deps, ctx) });
    ctx.body = deps.serialiser.runs.launch(view, baseUrlOf(ctx));
  };
}

/**
 * GET /v1/tests and GET /v1/certify: progress while the run is live, its results once it has ended; with
 * `include=questions` a page of its per-question results too, with `format=jsonl` all of them, one a line.
 */
export function poll(deps: RouteDeps, kind: 'test' | 'certification') {
  return async (ctx: Context): Promise<void> => {
    const batchId = parseBatchId(ctx.query.batch_id);
    const options = parseQuestionOptions(ctx.query);
    const runs = deps.serialiser.runs;
    if (options.format === 'jsonl') {
      const rows = await exportQuestions(deps, authOf(ctx), kind, batchId);
      ctx.type = 'application/x-ndjson';
      ctx.body = Readable.from(
        (async function* lines(): AsyncGenerator<string> {
          for await (const row of rows) yield `${JSON.stringify(runs.question(row, options.includeTranscript))}\n`;
        })(),
      );
      return;
    }
    const view = await pollRun(deps, authOf(ctx), kind, batchId);
    const page = options.page && runs.questions(await questionPage(deps, view.run, options.page));
    ctx.body = page ? { ...runs.poll(view), questions: page } : runs.poll(view);
  };
}

/** GET /v1/runs (issue 28 item 1): the organisation's runs the key may read, newest first, a page at a time. */
export function listRunsRoute(deps: RouteDeps) {
  return async (ctx: Context): Promise<void> => {
    const page = await listOrgRuns(deps, authOf(ctx), parseRunListQuery(ctx.query));
    ctx.body = runListBody(deps.serialiser.runs, page);
  };
}

/** POST /v1/tests/{batch_id}/cancel and /v1/certify/{batch_id}/cancel (issue 28 item 2): the poll's answer after. */
export function cancelRoute(deps: RouteDeps, kind: 'test' | 'certification') {
  return async (ctx: Context): Promise<void> => {
    const { view } = await cancelOrgRun(deps, authOf(ctx), { kind, batchId: String(ctx.params.batch_id) });
    ctx.body = deps.serialiser.runs.poll(view);
  };
}
