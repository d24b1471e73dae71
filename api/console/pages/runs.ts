import type Router from '@koa/router';
import type { RouteDeps } from '../../http/context';
import type { Context } from 'koa';
import type { RunRecord } from '../../../db/repositories/runs';
import { BUCKET_NAMES, type Form } from '../../../domain/form';
import { BUCKETS, type Bucket } from '../../../domain/questions/types';
import type { ResultGroup, RunSummary } from '../../../domain/run-summary';
import { ENDED_STATES, runTiming, SIMULATED_RUN_NOTE, totalQuestions, type RunProgress } from '../../../domain/runs';
import { VERDICT_LADDER, type CertificationVerdict } from '../../../domain/statistics';
import { runProgress } from '../../../starters/runs';
import { cancelOrgRun } from '../../../operations/run-cancel';
import { EVERY_RUN_SCOPE, recentRuns, runOf } from '../../../operations/run-list';
import { intervalChart, type IntervalRow } from '../chart';
import { equalCostSection } from './run-arms';
import { count, duration, percent, rate, usd, when } from '../format';
import { html, type Html } from '../../http/html';
import { csrfField, page } from '../layout';
import { ConsoleRefusal, personOf, requireOrg } from '../session';

/**
 * Test and certification runs (DESIGN §10, §14): the organisation's list, and each run's live progress, polled by
 * htmx every two seconds until it ends, then its win rate per bucket with 95% intervals as an SVG chart and a table.
 */

const LIST_SIZE = 50;
const POLL_EVERY = 'every 2s';

const runHref = (id: string): string => `/console/runs/${id}`;
const kindName = (run: RunRecord): string => (run.kind === 'test' ? 'Test run' : 'Certification');
/** A test key's run answered on `sim` engines: said wherever the run is shown (DESIGN §10). */
const simulatedTag = (run: RunRecord): Html | string =>
  run.keyKind === 'test' ? html` <span class="muted simulated" data-simulated="true" title="${SIMULATED_RUN_NOTE}">simulated</span>` : '';
const VERDICT_NAMES: Readonly<Record<CertificationVerdict, string>> = {
  certified: 'certified',
  provisional: 'provisional',
  not_certified: 'not certified',
};

/** The buckets a run asked questions of, in their order. */
const bucketsOf = (run: RunRecord): Bucket[] => BUCKETS.filter((b) => run.spec.counts[b] > 0);

async function ownRun(ctx: Context, deps: RouteDeps): Promise<RunRecord> {
  const { user } = requireOrg(ctx);
  // Another organisation's run is not found, exactly like an id that never existed.
  const run = await runOf(deps, personOf(user), String(ctx.params.id));
  if (!run) throw new ConsoleRefusal(404, 'No such run in this organisation.');
  return run;
}

function runsTable(runs: readonly RunRecord[], answered: ReadonlyMap<string, number>): Html {
  return html`<table id="runs-table">
    <caption class="visually-hidden">
      Test and certification runs, newest first
    </caption>
    <thead>
      <tr>
        <th scope="col">Created</th>
        <th scope="col">Kind</th>
        <th scope="col">Model</th>
        <th scope="col">State</th>
        <th scope="col" class="num">Progress</th>
        <th scope="col" class="num">Billed</th>
        <th scope="col">Verdict</th>
      </tr>
    </thead>
    <tbody>
      ${runs.map(
        (r) =>
          html`<tr data-run-id="${r.id}">
            <td><a href="${runHref(r.id)}">${when(r.createdAt)}</a></td>
            <td>${kindName(r)}${simulatedTag(r)}</td>
            <td>${r.model}</td>
            <td>${r.state}</td>
            <td class="num">${answered.get(r.id) ?? 0}/${r.totalQuestions}</td>
            <td class="num">${usd(r.billedMicros)}</td>
            <td>${r.summary?.verdict ? VERDICT_NAMES[r.summary.verdict] : ''}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function progressBar(label: string, done: number, total: number): Html {
  return html`<div class="progress-row" data-bucket="${label}" data-done="${done}" data-total="${total}">
    <span class="progress-label">${label}</span>
    <progress max="${total}" value="${done}" aria-label="${label}: ${done} of ${total} questions"></progress>
    <span class="num">${done}/${total}</span>
  </div>`;
}

function timingLine(run: RunRecord, progress: RunProgress, ended: boolean): string {
  const { elapsedMs, leftMs } = runTiming({ progress, finishedAt: run.finishedAt, estimatedMinutes: run.estimatedMinutes }, Date.now());
  if (ended) return `took ${duration(elapsedMs)}`;
  if (!progress.startedAt) return `not started yet; about ${duration(leftMs)} once it starts`;
  return `elapsed ${duration(elapsedMs)}, about ${duration(leftMs)} left`;
}

function resultRows(form: Form, run: RunRecord, s: RunSummary): { label: string; group: ResultGroup }[] {
  return [...bucketsOf(run).map((b) => ({ label: BUCKET_NAMES[form][b], group: s.perBucket[b] })), { label: 'overall', group: s.overall }];
}

function winRateTable(rows: readonly { label: string; group: ResultGroup }[]): Html {
  const accuracy = (a: ResultGroup['mode']): string => `${percent(a.rate)} (${a.correct}/${a.n})`;
  return html`<table id="win-rate-table">
    <caption>
      Win rate against the baseline with its 95% interval, and exact-answer accuracy
    </caption>
    <thead>
      <tr>
        <th scope="col">Bucket</th>
        <th scope="col" class="num">Questions</th>
        <th scope="col" class="num">Judgments</th>
        <th scope="col" class="num">Win rate</th>
        <th scope="col" class="num">95% low</th>
        <th scope="col" class="num">95% high</th>
        <th scope="col" class="num">Mode accuracy</th>
        <th scope="col" class="num">Baseline accuracy</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        ({ label, group: g }) =>
          html`<tr data-bucket="${label}">
            <th scope="row">${label}</th>
            <td class="num">${g.questions}</td>
            <td class="num">${g.judgments}</td>
            <td class="num">${g.winRate ? rate(g.winRate.winRate) : '—'}</td>
            <td class="num">${g.winRate ? rate(g.winRate.interval.low) : '—'}</td>
            <td class="num">${g.winRate ? rate(g.winRate.interval.high) : '—'}</td>
            <td class="num">${accuracy(g.mode)}</td>
            <td class="num">${accuracy(g.baseline)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** A rung's range of the lower bound L: above its own bound, up to the next rung's. */
function rungRange(above: number, below: number | undefined): string {
  if (below === undefined) return `L > ${above.toFixed(2)}`;
  if (above === -Infinity) return `L ≤ ${below.toFixed(2)}`;
  return `${above.toFixed(2)} < L ≤ ${below.toFixed(2)}`;
}

function certificationVerdict(s: RunSummary): Html {
  if (!s.verdict) return html``;
  const low = s.overall.winRate?.interval.low;
  return html`<div class="verdict ${s.verdict}" id="certification-verdict" data-verdict="${s.verdict}">
    <p class="big">${VERDICT_NAMES[s.verdict]}</p>
    <p>Lower bound of the 95% interval: <strong>${low === undefined ? 'none (no readable verdicts)' : rate(low)}</strong></p>
    <ol class="ladder" aria-label="Certification ladder on the lower bound L">
      ${VERDICT_LADDER.map(
        (rung, i) =>
          html`<li ${rung.verdict === s.verdict ? html`aria-current="true" class="reached"` : ''}>
            ${VERDICT_NAMES[rung.verdict]}: ${rungRange(rung.above, VERDICT_LADDER[i - 1]?.above)}
          </li>`,
      )}
    </ol>
  </div>`;
}

function resultsSection(form: Form, run: RunRecord, s: RunSummary): Html {
  const rows = resultRows(form, run, s);
  const plotted: IntervalRow[] = rows.flatMap(({ label, group: { winRate: w } }) =>
    w
      ? [
          {
            label,
            estimate: w.winRate,
            low: w.interval.low,
            high: w.interval.high,
            text: `${rate(w.winRate)} [${rate(w.interval.low)}, ${rate(w.interval.high)}]`,
          },
        ]
      : [],
  );
  const o = s.overall;
  return html`<section id="run-results" aria-labelledby="results-heading">
    <h2 id="results-heading">Results</h2>
    ${certificationVerdict(s)}
    ${
      plotted.length > 0
        ? intervalChart(plotted, { id: 'win-rate-chart', title: 'Win rate against the baseline with 95% intervals', reference: 0.5 })
        : html`<p>No judge gave a readable verdict, so there is no win rate to draw.</p>`
    }
    <p class="muted">
      Right of the dashed line the mode beat its baseline (its strongest engine alone); an interval that crosses it is too close to call.
    </p>
    ${winRateTable(rows)} ${s.equalCost ? equalCostSection(s.equalCost, run.spec.samplePlans?.[0]?.samples) : ''}
    <p>
      Accuracy against the known answers: the mode ${percent(o.mode.rate)} (95%
      ${percent(o.mode.interval.low)}–${percent(o.mode.interval.high)}), its baseline ${percent(o.baseline.rate)} (95%
      ${percent(o.baseline.interval.low)}–${percent(o.baseline.interval.high)}).
    </p>
    <p>
      Judge agreement (Fleiss' kappa): ${s.judgeAgreement === null ? 'not defined' : s.judgeAgreement.toFixed(2)}. Position consistency:
      ${
        s.positionConsistency.pairs === 0
          ? 'not measured (no judge saw the same answers in mirrored order; that takes two repeats).'
          : `${s.positionConsistency.flips} of ${count(s.positionConsistency.pairs, 'mirrored pair')} flipped.`
      }
      ${s.positionConsistency.flagged ? html`<strong class="refusal">Above the ${percent(s.positionConsistency.threshold)} threshold: the order moved the judges.</strong>` : ''}
    </p>
    ${
      s.recusals.length > 0
        ? html`<ul>
            ${s.recusals.map(
              (r) =>
                html`<li>
                  Judge ${r.slot} (<code>${r.engineId}</code>) recused itself${r.replacedBy ? html` for <code>${r.replacedBy}</code>` : ''}
                  on ${count(r.questions, 'question')}
                </li>`,
            )}
          </ul>`
        : ''
    }
  </section>`;
}

/** Everything on a run's page that changes while it runs; polls itself while live, and stops once the run ended. */
function runLive(ctx: Context, form: Form, run: RunRecord, progress: RunProgress): Html {
  // The row, not the query, says the run ended: its summary is written in the same transaction.
  const ended = ENDED_STATES.includes(run.state);
  const poll = ended ? html`` : html`hx-get="${runHref(run.id)}/progress" hx-trigger="${POLL_EVERY}" hx-swap="outerHTML"`;
  return html`<div id="run-progress" data-state="${progress.state}" ${poll}>
    <section aria-labelledby="progress-heading">
      <h2 id="progress-heading">Progress</h2>
      <p>
        <strong class="state">${progress.state}</strong> · ${timingLine(run, progress, ended)} · billed
        ${usd(run.billedMicros)}${run.refundedMicros > 0 ? `, ${usd(run.refundedMicros)} credited back` : ''}
      </p>
      ${bucketsOf(run).map((b) => progressBar(BUCKET_NAMES[form][b], progress.done[b], progress.total[b]))}
      ${progressBar('all', totalQuestions(progress.done), totalQuestions(progress.total))}
      ${progress.failed > 0 ? html`<p class="refusal">${count(progress.failed, 'question')} failed.</p>` : ''}
      ${run.errorCode ? html`<p class="flash error" role="alert">${run.errorMessage ?? ''} (<code>${run.errorCode}</code>)</p>` : ''}
      ${
        ended
          ? ''
          : html`<form method="post" action="${runHref(run.id)}/cancel" class="inline">
                ${csrfField(ctx)}<button id="cancel-run" class="danger">Cancel run</button>
              </form>
              <span class="muted">Unanswered questions are credited back when it stops.</span>`
      }
    </section>
    ${ended && run.summary ? resultsSection(form, run, run.summary) : ''}
  </div>`;
}

export function runPages(router: Router, deps: RouteDeps): void {
  router.get('/runs', async (ctx) => {
    const { user } = requireOrg(ctx);
    const { runs, answered } = await recentRuns(deps, personOf(user), LIST_SIZE);
    page(
      ctx,
      'Runs',
      runs.length === 0
        ? html`<p>
            No runs yet. Launch a test run with <code>POST /v1/tests</code> or a certification with <code>POST /v1/certify</code>.
          </p>`
        : runsTable(runs, answered),
    );
  });

  router.get('/runs/:id', async (ctx) => {
    const run = await ownRun(ctx, deps);
    const progress = await runProgress(deps.client, deps.db, run);
    page(
      ctx,
      run.keyKind === 'test' ? `Simulated ${kindName(run).toLowerCase()} of ${run.model}` : `${kindName(run)} of ${run.model}`,
      html`${ctx.query.cancelling ? html`<p class="flash" role="status">Stopping the run; questions in flight are cancelled.</p>` : ''}
        ${ctx.query.cancelled && run.state === 'cancelled' ? html`<p class="flash" id="run-cancelled" role="status">Run cancelled: the questions in flight were abandoned and the unanswered ones credited back.</p>` : ''}
        ${run.keyKind === 'test' ? html`<p class="flash" id="run-simulated" role="note">${SIMULATED_RUN_NOTE}</p>` : ''}
        <dl class="facts">
          <dt>Run</dt>
          <dd><code>${run.id}</code></dd>
          <dt>Created</dt>
          <dd>${when(run.createdAt)}</dd>
          <dt>Questions</dt>
          <dd>
            ${run.totalQuestions}
            (${bucketsOf(run)
              .map((b) => `${run.spec.counts[b]} ${BUCKET_NAMES[deps.form][b]}`)
              .join(', ')})
          </dd>
          <dt>Judging</dt>
          <dd>
            ${run.spec.protocol}, ${count(run.spec.judges.length, 'judge')} ×
            ${count(run.spec.repeats, 'repeat')}${run.spec.punchUp ? ', punching up a tier' : ''}
          </dd>
          <dt>Key</dt>
          <dd>${run.keyKind === 'test' ? 'test (simulated: sim engines, not billed, never evidence)' : 'live'}</dd>
        </dl>
        ${runLive(ctx, deps.form, run, progress)}`,
    );
  });

  router.get('/runs/:id/progress', async (ctx) => {
    const run = await ownRun(ctx, deps);
    const progress = await runProgress(deps.client, deps.db, run);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = runLive(ctx, deps.form, run, progress).value;
  });

  // The API's cancel (operations/run-cancel.ts): back on the page the run shows `cancelled` and what was credited
  // back, or, when it takes longer to stop, that it is stopping. An ended run is left as it was.
  router.post('/runs/:id/cancel', async (ctx) => {
    const run = await ownRun(ctx, deps);
    const { view, signalled } = await cancelOrgRun(
      deps,
      { orgId: run.orgId, scopes: EVERY_RUN_SCOPE },
      { kind: run.kind, batchId: run.id },
    );
    const stopped = ENDED_STATES.includes(view.progress.state);
    ctx.redirect(signalled ? `${runHref(run.id)}?${stopped ? 'cancelled' : 'cancelling'}=1` : runHref(run.id));
  });
}
