import type Router from '@koa/router';
import type { RouteDeps } from '../../http/context';
import type { Context } from 'koa';
import type { ReceiptLine } from '../../../db/repositories/receipts';
import { receiptOf, receiptsOf } from '../../../operations/receipts';
import type { Form } from '../../../domain/form';
import type { Outcome, StaffCall } from '../../../domain/outcome';
import { barChart } from '../chart';
import { count, duration, usd, when } from '../format';
import { html, type Html } from '../../http/html';
import { page } from '../layout';
import { ConsoleRefusal, personOf, requireOrg } from '../session';

/** Receipts of the organisation's calls (DESIGN §14): a list a page at a time, and each call's seats, verdict and money. */

const PAGE_SIZE = 50;
/** Deep pages cost an offset scan; older calls are in the API's receipts by id. */
const MAX_PAGE = 200;

/** A mode as this deployment's Form names it in `model`. */
const modelOf = (form: Form, r: Pick<ReceiptLine, 'modeId' | 'ticker'>): string => (form === 'B' ? r.ticker : r.modeId);

const receiptHref = (requestId: string): string => `/console/receipts/${encodeURIComponent(requestId)}`;

function pageNumber(ctx: Context): number {
  const n = Number(ctx.query.page ?? 1);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE) throw new ConsoleRefusal(400, `Pages run from 1 to ${MAX_PAGE}.`);
  return n;
}

function receiptsTable(form: Form, lines: readonly ReceiptLine[]): Html {
  return html`<table id="receipts-table">
    <caption class="visually-hidden">
      Recent calls, newest first
    </caption>
    <thead>
      <tr>
        <th scope="col">When</th>
        <th scope="col">Mode</th>
        <th scope="col">Lane</th>
        <th scope="col">Tier</th>
        <th scope="col">Status</th>
        <th scope="col" class="num">Seats answered</th>
        <th scope="col" class="num">Fallbacks</th>
        <th scope="col" class="num">Billed</th>
        ${form === 'B' ? html`<th scope="col" class="num">Cap credit</th>` : ''}
        <th scope="col" class="num">Latency</th>
      </tr>
    </thead>
    <tbody>
      ${lines.map(
        (r) =>
          html`<tr data-request-id="${r.requestId}">
            <td><a href="${receiptHref(r.requestId)}">${when(r.createdAt)}</a></td>
            <td>${modelOf(form, r)}</td>
            <td>${r.lane ?? ''}</td>
            <td>${r.tier}</td>
            <td>${r.status}</td>
            <td class="num">${r.seatsAnswered} of ${r.seats}</td>
            <td class="num">${r.fallbacks}</td>
            <td class="num">${usd(r.billedMicros)}</td>
            ${form === 'B' ? html`<td class="num">${r.capCreditMicros === 0 ? usd(0) : `−${usd(r.capCreditMicros)}`}</td>` : ''}
            <td class="num">${duration(r.latencyMs)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

const yesNo = (v: boolean | null, none: string): string => (v === null ? none : v ? 'yes' : 'no');
const score = (s: number | null): string => (s === null ? '' : s.toFixed(2));
const divergence = (d: number | null): string => (d === null ? 'not measured' : d.toFixed(3));

function staffLine(name: string, call: StaffCall | null): Html {
  if (!call?.modelUsed) return html`<li>${name}: did not run</li>`;
  return html`<li>
    ${name}:
    <code>${call.modelUsed}</code
    >${call.fallbackUsed && call.originalModel ? html` (fell back from <code>${call.originalModel}</code>)` : ''}${
      call.latencyMs === null ? '' : `, ${duration(call.latencyMs)}`
    }
  </li>`;
}

function seatsSection(o: Outcome): Html {
  if (o.seatPasses.length === 0) return html`<p>No seat answered this call.</p>`;
  // Stored as the passes finished; read round by round, seat by seat.
  const passes = [...o.seatPasses].sort((a, b) => a.round - b.round || a.role.localeCompare(b.role));
  return html`<table id="seat-passes">
      <caption class="visually-hidden">
        Each seat's answer in each round
      </caption>
      <thead>
        <tr>
          <th scope="col">Seat</th>
          <th scope="col" class="num">Round</th>
          <th scope="col">Engine</th>
          <th scope="col">Fell back from</th>
          <th scope="col" class="num">Judge score</th>
          <th scope="col">Best</th>
          <th scope="col" class="num">Tokens in / out</th>
          <th scope="col" class="num">Latency</th>
          <th scope="col" class="num">Engine cost</th>
          <th scope="col" class="num">Platform fee</th>
        </tr>
      </thead>
      <tbody>
        ${passes.map(
          (p) =>
            html`<tr>
              <td>${p.role}</td>
              <td class="num">${p.round}</td>
              <td><code>${p.modelUsed}</code>${p.source === 'own_key' ? html` <span class="muted">(your key)</span>` : ''}</td>
              <td>${p.fallbackUsed && p.originalModel ? html`<code>${p.originalModel}</code>` : ''}</td>
              <td class="num">${score(p.judgeScore)}</td>
              <td>${p.isBest ? html`<span class="ok">best</span>` : p.late ? html`<span class="muted">late: ${p.late}</span>` : ''}</td>
              <td class="num">${p.tokensIn} / ${p.tokensOut}</td>
              <td class="num">${duration(p.latencyMs)}</td>
              <td class="num">${usd(p.realCostMicros)}</td>
              <td class="num">${usd(p.feeMicros)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${barChart(
      passes.map((p) => ({ label: `${p.role} round ${p.round}`, value: p.latencyMs, text: duration(p.latencyMs) })),
      { id: 'seat-latency-chart', title: 'Latency of each seat pass' },
    )}`;
}

function verdictSection(o: Outcome): Html {
  return html`<dl class="facts">
      <dt>Converged</dt>
      <dd>${yesNo(o.converged, 'not judged (express lane)')}</dd>
      <dt>Divergence</dt>
      <dd>first round ${divergence(o.divergenceFirst)}, last round ${divergence(o.divergenceFinal)}</dd>
      <dt>Best seat</dt>
      <dd>
        ${o.bestSeat ? html`${o.bestSeat.role} on <code>${o.bestSeat.modelUsed}</code>, score ${score(o.bestSeat.judgeScore)}` : 'none'}
        <span class="muted">(judged by ${o.bestSeatJudgedBy})</span>
      </dd>
      ${
        o.bestSeatRationale
          ? html`<dt>Why</dt>
              <dd>${o.bestSeatRationale}</dd>`
          : ''
      }
      <dt>Factual conflict</dt>
      <dd>${yesNo(o.factualConflict, '')}</dd>
    </dl>
    ${
      o.contestedPassage
        ? html`<figure class="contested">
            <blockquote>${o.contestedPassage.quote}</blockquote>
            <figcaption>Contested passage from ${o.contestedPassage.seat}: ${o.contestedPassage.why}</figcaption>
          </figure>`
        : ''
    }
    <h3>Staff</h3>
    <ul>
      ${staffLine('Judge', o.staff.judge)} ${staffLine('Synthesis', o.staff.synthesis)}
      <li>
        Grounding: ${o.staff.grounding.fired ? html`searched with <code>${o.staff.grounding.modelUsed ?? 'documents'}</code>` : 'not used'}
      </li>
    </ul>
    ${
      o.substitutions.length + o.seatsUnavailable.length + o.staffUnavailable.length > 0
        ? html`<h3>Substitutions and engines unavailable</h3>
            <ul>
              ${o.substitutions.map((s) => html`<li>${s.role}: <code>${s.used}</code> instead of <code>${s.original}</code> (${s.reason})</li>`)}
              ${[...o.seatsUnavailable, ...o.staffUnavailable].map((u) => html`<li>${u.role} unavailable: ${u.reason}</li>`)}
            </ul>`
        : ''
    }`;
}

function moneySection(o: Outcome): Html {
  const m = o.money;
  return html`<table id="receipt-money" class="narrow">
    <caption class="visually-hidden">
      What the call cost
    </caption>
    <tbody>
      <tr>
        <th scope="row">Engines (gateway)</th>
        <td class="num">${usd(m.gatewayMicros)}</td>
      </tr>
      <tr>
        <th scope="row">Platform fee</th>
        <td class="num">${usd(m.platformFeeMicros)}</td>
      </tr>
      <tr>
        <th scope="row">Mode fee</th>
        <td class="num">${usd(m.modeFeeMicros)}</td>
      </tr>
      <tr>
        <th scope="row">Cap credit</th>
        <td class="num">${m.capCreditMicros === 0 ? usd(0) : `−${usd(m.capCreditMicros)}`}</td>
      </tr>
      <tr>
        <th scope="row">Billed</th>
        <td class="num" id="receipt-billed"><strong>${usd(m.billedMicros)}</strong></td>
      </tr>
      <tr>
        <th scope="row">Ceiling</th>
        <td class="num">${m.ceilingMicros === null ? 'none (paid by a plan at real cost)' : usd(m.ceilingMicros)}</td>
      </tr>
    </tbody>
  </table>`;
}

function receiptDetail(form: Form, o: Outcome): Html {
  return html`<div id="receipt-detail" data-request-id="${o.requestId}">
    <dl class="facts">
      <dt>Request</dt>
      <dd><code>${o.requestId}</code></dd>
      <dt>When</dt>
      <dd>${when(new Date(o.createdAt))}</dd>
      <dt>Mode</dt>
      <dd>${modelOf(form, o)}</dd>
      <dt>Tier and lane</dt>
      <dd>${o.tier}, ${o.lane}</dd>
      <dt>Status</dt>
      <dd>${o.status} (finish: ${o.finishReason})</dd>
      <dt>Seats answered</dt>
      <dd>${o.seatsAnswered} of ${o.seats}, ${count(o.rounds, 'round')}</dd>
      <dt>Latency</dt>
      <dd>${duration(o.latencyMs)}</dd>
      <dt>Tokens</dt>
      <dd>${o.usage.promptTokens} in, ${o.usage.completionTokens} out</dd>
      <dt>Paid by</dt>
      <dd>${o.payer}</dd>
    </dl>
    <h2>Seats</h2>
    ${seatsSection(o)}
    <h2>The judge's verdict</h2>
    ${verdictSection(o)}
    <h2>Money</h2>
    ${moneySection(o)}
    <h2>Answer</h2>
    <details>
      <summary>Show the answer returned</summary>
      <pre class="answer">${o.answer}</pre>
    </details>
  </div>`;
}

export function receiptPages(router: Router, deps: RouteDeps): void {
  router.get('/receipts', async (ctx) => {
    const { user } = requireOrg(ctx);
    const n = pageNumber(ctx);
    // One more than a page says whether an older page exists.
    const lines = await receiptsOf(deps, personOf(user), { limit: PAGE_SIZE + 1, offset: (n - 1) * PAGE_SIZE });
    const shown = lines.slice(0, PAGE_SIZE);
    page(
      ctx,
      'Receipts',
      html`${
          shown.length === 0
            ? html`<p>
                No calls yet${n > 1 ? ' on this page' : ''}. Each call to <code>/v1/chat/completions</code> leaves a receipt here.
              </p>`
            : receiptsTable(deps.form, shown)
        }
        <nav aria-label="Pages of receipts" class="pager">
          ${n > 1 ? html`<a href="/console/receipts?page=${n - 1}" rel="prev">Newer</a>` : ''}
          ${lines.length > PAGE_SIZE && n < MAX_PAGE ? html`<a href="/console/receipts?page=${n + 1}" rel="next">Older</a>` : ''}
        </nav>`,
    );
  });

  router.get('/receipts/:requestId', async (ctx) => {
    const { user } = requireOrg(ctx);
    const { requestId } = ctx.params;
    // Another organisation's call is not found, exactly like an id that never existed.
    const found = await receiptOf(deps, personOf(user), requestId);
    if (!found) throw new ConsoleRefusal(404, 'No such call in this organisation.');
    if (!found.available)
      return page(
        ctx,
        `Call ${requestId}`,
        html`<div id="receipt-detail" data-request-id="${requestId}">
          <p>No receipt: ${found.reason} <span class="muted">(${found.status})</span></p>
        </div>`,
      );
    page(ctx, `Call ${requestId}`, receiptDetail(deps.form, found.outcome));
  });
}
