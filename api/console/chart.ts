import { html, type Html } from '../http/html';

/**
 * The console's charts: small SVG drawn on the server with the escaping template tag, so a page needs no chart
 * script (the CSP allows none inline) and reads the same with scripts off. Each is an image with a title and an
 * `aria-label` that states its numbers; the pages print the same numbers in a table beside it. Colours come from
 * classes in styles.ts.
 */

const WIDTH = 680;
const LABEL_WIDTH = 120;
const VALUE_WIDTH = 190;
const PLOT_WIDTH = WIDTH - LABEL_WIDTH - VALUE_WIDTH;
const ROW_HEIGHT = 34;
const TOP = 12;
const AXIS_HEIGHT = 28;

/** Coordinates are rounded: the markup stays short and the drawing loses nothing at this size. */
const px = (n: number): string => n.toFixed(1);

/** Where a value of the 0–1 axis lies (drawn inside the axis even when an interval reaches past it). */
const unitX = (v: number): number => LABEL_WIDTH + Math.min(1, Math.max(0, v)) * PLOT_WIDTH;

const rowY = (i: number): number => TOP + i * ROW_HEIGHT + ROW_HEIGHT / 2;

function frame(opts: { id: string; title: string; rows: number; axis: boolean; body: Html }): Html {
  const height = TOP + opts.rows * ROW_HEIGHT + (opts.axis ? AXIS_HEIGHT : TOP);
  return html`<svg
    id="${opts.id}"
    class="chart"
    role="img"
    aria-label="${opts.title}"
    viewBox="0 0 ${WIDTH} ${height}"
    width="${WIDTH}"
    height="${height}"
    xmlns="http://www.w3.org/2000/svg"
  >
    <title>${opts.title}</title>
    ${opts.body}
  </svg>`;
}

function rowLabel(i: number, label: string): Html {
  return html`<text class="label" x="${LABEL_WIDTH - 10}" y="${px(rowY(i))}" text-anchor="end" dominant-baseline="middle">${label}</text>`;
}

function valueText(i: number, text: string): Html {
  return html`<text class="value" x="${LABEL_WIDTH + PLOT_WIDTH + 12}" y="${px(rowY(i))}" dominant-baseline="middle">${text}</text>`;
}

export interface IntervalRow {
  label: string;
  estimate: number;
  low: number;
  high: number;
  /** What the row's numbers say, for the value column and the image's description. */
  text: string;
}

/**
 * Estimates with their intervals on a 0–1 axis, one row each, and a dashed line at `reference` (a win rate's
 * coin flip). Each row's group carries its numbers unrounded in `data-*` attributes. An interval reaching past the
 * axis is drawn to its edge without an end cap.
 */
export function intervalChart(rows: readonly IntervalRow[], opts: { id: string; title: string; reference: number }): Html {
  const bottom = TOP + rows.length * ROW_HEIGHT;
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  const body = html`<g class="axis">
      <line x1="${LABEL_WIDTH}" x2="${LABEL_WIDTH + PLOT_WIDTH}" y1="${bottom}" y2="${bottom}" />
      ${ticks.map(
        (t) =>
          html`<line x1="${px(unitX(t))}" x2="${px(unitX(t))}" y1="${bottom}" y2="${bottom + 5}" /><text
              x="${px(unitX(t))}"
              y="${bottom + 18}"
              text-anchor="middle"
              >${String(t)}</text
            >`,
      )}
    </g>
    <line
      class="reference"
      stroke-dasharray="5 4"
      x1="${px(unitX(opts.reference))}"
      x2="${px(unitX(opts.reference))}"
      y1="${TOP}"
      y2="${bottom}"
    />
    ${rows.map((r, i) => {
      const y = rowY(i);
      return html`<g class="interval" data-label="${r.label}" data-estimate="${r.estimate}" data-low="${r.low}" data-high="${r.high}">
        ${rowLabel(i, r.label)}
        <line class="whisker" x1="${px(unitX(r.low))}" x2="${px(unitX(r.high))}" y1="${px(y)}" y2="${px(y)}" />
        ${[r.low, r.high].filter((v) => v >= 0 && v <= 1).map((v) => html`<line class="whisker" x1="${px(unitX(v))}" x2="${px(unitX(v))}" y1="${px(y - 7)}" y2="${px(y + 7)}" />`)}
        <circle class="point" cx="${px(unitX(r.estimate))}" cy="${px(y)}" r="5" />
        ${valueText(i, r.text)}
      </g>`;
    })}`;
  const title = `${opts.title}: ${rows.map((r) => `${r.label} ${r.text}`).join('; ')}.`;
  return frame({ id: opts.id, title, rows: rows.length, axis: true, body });
}

export interface BarRow {
  label: string;
  value: number;
  text: string;
}

/** Bars from zero, scaled to the largest value, each labelled with its `text`. */
export function barChart(rows: readonly BarRow[], opts: { id: string; title: string }): Html {
  const max = Math.max(...rows.map((r) => r.value), 1);
  const body = html`${rows.map(
    (r, i) =>
      html`<g class="bar-row" data-label="${r.label}" data-value="${r.value}">
        ${rowLabel(i, r.label)}
        <rect class="bar" x="${LABEL_WIDTH}" y="${px(rowY(i) - 9)}" width="${px(Math.max(1, (r.value / max) * PLOT_WIDTH))}" height="18" />
        ${valueText(i, r.text)}
      </g>`,
  )}`;
  const title = `${opts.title}: ${rows.map((r) => `${r.label} ${r.text}`).join('; ')}.`;
  return frame({ id: opts.id, title, rows: rows.length, axis: false, body });
}
