/**
 * A strict reader of the Prometheus text exposition format (what prom-client and the Temporal SDK's exporter write),
 * so a test reads metrics by name and labels rather than by regex, and a malformed or doubly declared family fails.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** Each metric family's declared type (counter, gauge, histogram…). */
  types: Map<string, string>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

/**
 * A value as Prometheus reads it: Go's `strconv.ParseFloat`, whose NaN and infinities are case-insensitive.
 * prom-client writes `Nan` (e.g. the event-loop lag mean before its first sample), which Prometheus accepts.
 */
function parseValue(text: string, line: string): number {
  if (/^nan$/i.test(text)) return NaN;
  const infinity = /^([+-]?)(inf|infinity)$/i.exec(text);
  if (infinity) return infinity[1] === '-' ? -Infinity : Infinity;
  const value = Number(text);
  if (text === '' || Number.isNaN(value)) throw new Error(`bad value in: ${line}`);
  return value;
}

/** `{a="x",b="y\"z"}` from `at` (the `{`); returns the labels and the index after `}`. */
function parseLabels(line: string, at: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = at + 1;
  while (line[i] !== '}') {
    const name = NAME.exec(line.slice(i))?.[0];
    if (!name || line[i + name.length] !== '=' || line[i + name.length + 1] !== '"') throw new Error(`bad label in: ${line}`);
    i += name.length + 2;
    let value = '';
    while (line[i] !== '"') {
      if (i >= line.length) throw new Error(`unterminated label value in: ${line}`);
      if (line[i] === '\\') {
        const escaped = line[i + 1];
        value += escaped === 'n' ? '\n' : escaped;
        i += 2;
      } else value += line[i++];
    }
    labels[name] = value;
    i += 1;
    if (line[i] === ',') i += 1;
    else if (line[i] !== '}') throw new Error(`bad label list in: ${line}`);
  }
  return { labels, end: i + 1 };
}

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type) {
        if (types.has(type[1])) throw new Error(`metric family ${type[1]} declared twice`);
        types.set(type[1], type[2]);
      }
      continue;
    }
    const name = NAME.exec(line)?.[0];
    if (!name) throw new Error(`bad sample: ${line}`);
    let labels: Record<string, string> = {};
    let rest = line.slice(name.length);
    if (rest.startsWith('{')) {
      const parsed = parseLabels(line, name.length);
      labels = parsed.labels;
      rest = line.slice(parsed.end);
    }
    // A value, then an optional timestamp.
    const [value] = rest.trim().split(/\s+/);
    samples.push({ name, labels, value: parseValue(value ?? '', line) });
  }
  return { samples, types };
}

/** The samples named `name` whose labels include every one of `match`. */
export function samplesOf(e: Exposition, name: string, match: Record<string, string> = {}): Sample[] {
  return e.samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}

/** Σ of those samples' values (0 when there are none). */
export function total(e: Exposition, name: string, match: Record<string, string> = {}): number {
  return samplesOf(e, name, match).reduce((n, s) => n + s.value, 0);
}
