import type { Arm, ArmSummary } from '../../../domain/equal-cost';
import { intervalChart } from '../chart';
import { duration, percent, usd } from '../format';
import { html, type Html } from '../../http/html';

/**
 * A run page's equal-cost arms (issue 39 item 2): each arm's accuracy against the gold answers with its 95% interval
 * as a chart, the mode's accuracy dashed across it, and a table of what each arm cost and took and how far the mode
 * was ahead of it, paired by question, with its interval.
 */

const ARM_NAMES: Readonly<Record<Arm, string>> = {
  mode: 'The mode',
  baseline: 'Baseline, once',
  self_moa: 'Self-MoA',
  majority_vote: 'Majority vote',
};

function signed(x: number): string {
  return `${x >= 0 ? '+' : '−'}${percent(Math.abs(x))}`;
}

function difference(a: ArmSummary): string {
  const d = a.modeMinusArm;
  if (!d) return '';
  return d.interval
    ? `${signed(d.difference)} [${signed(d.interval.low)}, ${signed(d.interval.high)}]`
    : `${signed(d.difference)} (${d.noInterval})`;
}

export function equalCostSection(arms: readonly ArmSummary[], samples: number | undefined): Html {
  const mode = arms.find((a) => a.arm === 'mode');
  const rows = arms
    .filter((a) => a.questions > 0)
    .map((a) => ({
      label: ARM_NAMES[a.arm],
      estimate: a.accuracy,
      low: a.accuracyInterval.low,
      high: a.accuracyInterval.high,
      text: `${percent(a.accuracy)} [${percent(a.accuracyInterval.low)}, ${percent(a.accuracyInterval.high)}]`,
    }));
  return html`<section id="equal-cost" aria-labelledby="equal-cost-heading">
    <h2 id="equal-cost-heading">Against the same money spent on its best engine</h2>
    ${intervalChart(rows, { id: 'equal-cost-chart', title: 'Accuracy against the gold answers with 95% intervals, per arm', reference: mode?.accuracy ?? 0 })}
    <p class="muted">
      The dashed line is the mode's accuracy. Self-MoA and the majority vote ask the baseline's engine ${samples ?? 'k'} times, what the
      mode's seats cost per question; Self-MoA writes one answer from them with the mode's synthesis engine.
    </p>
    <table id="equal-cost-table">
      <caption>
        Each arm's accuracy, cost per question and median time, and the mode's accuracy minus the arm's (paired by question, clustered 95%
        interval)
      </caption>
      <thead>
        <tr>
          <th scope="col">Arm</th>
          <th scope="col" class="num">Accuracy</th>
          <th scope="col" class="num">Cost / question</th>
          <th scope="col" class="num">Median time</th>
          <th scope="col" class="num">Mode minus arm</th>
        </tr>
      </thead>
      <tbody>
        ${arms.map(
          (a) =>
            html`<tr data-arm="${a.arm}">
              <th scope="row">${ARM_NAMES[a.arm]}</th>
              <td class="num">${percent(a.accuracy)} (${String(a.questions)})</td>
              <td class="num">${usd(a.costPerQuestionMicros)}</td>
              <td class="num">${duration(a.latencyMsMedian)}</td>
              <td class="num">${difference(a)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}
