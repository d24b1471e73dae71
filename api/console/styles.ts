/** The console's one stylesheet, served from memory (tsc copies no assets into dist/): system fonts only, nothing outside the machine. */
export const CONSOLE_CSS = `
:root { --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --accent: #0969da; --bad: #cf222e; --good: #1a7f37; --bg: #ffffff; --panel: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
header.top { display: flex; gap: 1rem; align-items: center; padding: .6rem 1.2rem; border-bottom: 1px solid var(--line); background: var(--panel); flex-wrap: wrap; }
header.top .brand { font-weight: 700; margin-right: 1rem; }
header.top nav { display: flex; gap: .9rem; flex-wrap: wrap; }
header.top nav a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--fg); }
header.top .who { margin-left: auto; display: flex; gap: .6rem; align-items: center; }
main { max-width: 1100px; margin: 1.5rem auto; padding: 0 1.2rem; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.6rem 0 .6rem; }
form.stack { display: grid; gap: .8rem; max-width: 34rem; }
label { display: grid; gap: .2rem; font-weight: 600; }
label .hint { font-weight: 400; color: var(--muted); font-size: .9em; }
input, select, textarea { font: inherit; padding: .4rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
textarea { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
input:focus, select:focus, textarea:focus, button:focus, a:focus { outline: 3px solid #80b3ff; outline-offset: 1px; }
button, .button { font: inherit; padding: .45rem .9rem; border-radius: 6px; border: 1px solid #1f6feb; background: #1f6feb; color: #fff; cursor: pointer; text-decoration: none; display: inline-block; }
button.secondary { background: #fff; color: var(--fg); border-color: var(--line); }
button.danger { background: var(--bad); border-color: var(--bad); }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.flash { padding: .6rem .8rem; border-radius: 6px; margin-bottom: 1rem; background: #ddf4ff; border: 1px solid #54aeff; }
.flash.error, .error-box { background: #ffebe9; border: 1px solid #ff8182; padding: .6rem .8rem; border-radius: 6px; }
.refusal { color: var(--bad); font-size: .9em; font-weight: 400; }
.refusal code { font-weight: 600; }
.ok { color: var(--good); }
.secret { font-family: ui-monospace, monospace; background: var(--panel); border: 1px dashed var(--line); padding: .5rem; word-break: break-all; }
pre { background: var(--panel); padding: .8rem; border-radius: 6px; overflow-x: auto; font-size: 13px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr)); gap: 1rem; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: .8rem 1rem; }
.card .big { font-size: 1.6rem; font-weight: 700; }
.muted { color: var(--muted); }
.bar { height: .8rem; background: var(--panel); border: 1px solid var(--line); border-radius: 4px; overflow: hidden; }
.bar > span { display: block; height: 100%; background: var(--accent); }
.inline { display: inline; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 1.5rem; }
@media (max-width: 800px) { .grid2 { grid-template-columns: 1fr; } }
form.mode-form { display: grid; gap: 1rem; }
form.mode-form fieldset, #runs-box fieldset { border: 1px solid var(--line); border-radius: 8px; padding: .6rem 1rem 1rem; display: grid; gap: .8rem; align-content: start; min-width: 0; }
form.mode-form .field > input, form.mode-form .field > select, form.mode-form .field > textarea { width: 100%; min-width: 0; }
form.mode-form legend, #runs-box legend { font-weight: 700; padding: 0 .3rem; }
.field { display: grid; gap: .2rem; min-width: 0; }
.rows { display: grid; grid-template-columns: repeat(auto-fit, minmax(16rem, 1fr)); gap: 1rem; }
.actions { display: flex; gap: .6rem; flex-wrap: wrap; }
#runs-box .grid2 { align-items: start; margin-bottom: 1rem; }
details > summary { cursor: pointer; font-weight: 600; }
summary:focus { outline: 3px solid #80b3ff; outline-offset: 1px; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: .5rem; background: #fff; padding: .3rem .6rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 0 0 1rem; }
dl.facts dt { font-weight: 600; color: var(--muted); }
dl.facts dd { margin: 0; }
table.narrow { width: auto; min-width: 20rem; }
.pager { display: flex; gap: 1rem; margin: .5rem 0 1rem; }
.progress-row { display: grid; grid-template-columns: 6rem 1fr 5rem; gap: .8rem; align-items: center; margin: .3rem 0; max-width: 40rem; }
.progress-row progress { width: 100%; height: .9rem; accent-color: var(--accent); }
.chart { display: block; max-width: 100%; height: auto; margin: .8rem 0; font-size: 13px; }
.chart text { fill: var(--fg); }
.chart .axis line { stroke: var(--muted); }
.chart .axis text, .chart .value { fill: var(--muted); }
.chart .reference { stroke: var(--bad); stroke-width: 1.5; }
.chart .whisker { stroke: var(--fg); stroke-width: 2; }
.chart .point { fill: var(--accent); stroke: #fff; stroke-width: 1.5; }
.chart .bar { fill: var(--accent); }
.verdict { border: 1px solid var(--line); border-radius: 8px; padding: .6rem 1rem; margin: .8rem 0; }
.verdict .big { font-size: 1.4rem; font-weight: 700; margin: 0; }
.verdict.certified .big { color: var(--good); }
.verdict.not_certified .big { color: var(--bad); }
.ladder li.reached { font-weight: 700; }
figure.contested { margin: .5rem 0; padding: .5rem .8rem; border-left: 4px solid var(--bad); background: var(--panel); }
figure.contested blockquote { margin: 0 0 .3rem; }
pre.answer { white-space: pre-wrap; }
`;
