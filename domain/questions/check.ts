import { MONTHS, isValidDate, isoDate, parseIsoDate, type CivilDate } from './calendar';
import { findNumberWords } from './number-words';
import type { Question } from './types';

/**
 * Reading a model's reply against a known answer. The answer is the text after the last `Final answer:`, else the
 * reply's last non-empty line; it is compared exactly, after forgiving formatting only:
 * - a number reference (`42`, `-3`, `6.5`): the answer must hold exactly one distinct number, written in digits
 *   (`42.0`, `1,234`, `$6.50`) or words (`forty-two`), equal to it; other words around it (`42 km`) are fine, but a
 *   second number (`42 or 43`) or a hedge (`not 42`) makes it wrong;
 * - a date reference (`2024-03-05`): exactly one distinct date, ISO or written (`March 5, 2024`, `5th March 2024`);
 * - any other reference: the same text, ignoring case, accents, spacing, markdown and surrounding punctuation.
 * A benchmark question says how its answer reads (`answerKind`):
 * - `choice`: one letter (`B`, `(B)`, `B. food`, `Option B`, `The answer is B`) or exactly one option's text; two
 *   letters or a hedge is wrong;
 * - `yes-no`: `yes`/`no` (or `true`/`false`) leading the answer, unhedged;
 * - `math`: the same expression after LaTeX's spacing, sizing and wrappers are dropped, or the same number when both
 *   are plain numbers or fractions (`\frac{1}{2}`, `1/2`, `0.5`).
 */
export function checkAnswer(reply: string, reference: string, asked: Pick<Question, 'answerKind' | 'choices'> = {}): boolean {
  switch (asked.answerKind) {
    case 'choice':
      return chosenLetter(clean(extractFinalAnswer(reply)), asked.choices ?? []) === reference.toUpperCase();
    case 'yes-no':
      return yesOrNo(clean(extractFinalAnswer(reply))) === reference.toLowerCase();
    case 'math':
      return sameExpression(extractFinalAnswer(reply), reference);
    default:
      return checkShaped(reply, reference);
  }
}

/** The generated families' rule, and a benchmark's `number` answers: by the reference's shape. */
function checkShaped(reply: string, reference: string): boolean {
  const answer = clean(extractFinalAnswer(reply));
  const ref = clean(reference);
  const number = wholeNumber(ref);
  if (number !== undefined) return !hedged(answer) && single(findNumbers(afterEquals(answer))) === number;
  const date = parseIsoDate(ref) ?? onlyDate(ref);
  if (date !== undefined) return !hedged(answer) && single(findDates(afterEquals(answer))) === isoDate(date);
  return plainText(answer) === plainText(ref);
}

/** `Final answer:` in any case, also as markdown (`**Final answer:**`, `**Final answer**:`). */
const MARKER = /final\s+answer\s*(?:\*\*|__)?\s*[:：]/gi;

/** Whether the reply states its answer after an explicit `Final answer:` marker. */
export function hasFinalAnswerMarker(reply: string): boolean {
  return reply.search(new RegExp(MARKER.source, 'i')) >= 0;
}

/**
 * The text after the last `Final answer:` (its first non-empty line: a model may add a closing remark below it), else
 * the last non-empty line of the reply. Trimmed, otherwise as written.
 */
export function extractFinalAnswer(reply: string): string {
  const text = reply.replace(/\r\n?/g, '\n');
  const last = [...text.matchAll(MARKER)].at(-1);
  const lines = (last ? text.slice(last.index + last[0].length) : text)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.replace(/[*_`\s]/g, '') !== '');
  if (last) return (lines[0] ?? '').replace(/^(\*\*|__)\s*/, '');
  return lines.at(-1) ?? '';
}

/** Typographic variants made plain, LaTeX and markdown wrappers dropped, surrounding punctuation trimmed. */
function clean(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/[\u2212\u2012\u2013]/g, '-')
    .replace(/[\u00a0\u2007\u202f]/g, ' ')
    .replace(/[\u200b-\u200d\ufeff]/g, '')
    .replace(/\\(?:boxed|text|mathrm)\{([^{}]*)\}/g, '$1')
    .replace(/[*`]|__|\$\$|\\[()[\]]/g, '')
    .replace(/^[\s"'“”‘’«»()[\]{}<>.,;:!?]+|[\s"'“”‘’«»()[\]{}<>.,;:!?]+$/g, '')
    .trim();
}

function plainText(text: string): string {
  return text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().replace(/\s+/g, ' ');
}

/** Words that turn a single value into a non-answer: `42 or 43`, `not 42`, `between 40 and 50`. */
function hedged(answer: string): boolean {
  return /\b(or|not|nor|either|neither|between|except|isn't)\b/i.test(answer);
}

/** `6 × 7 = 42`: only what follows the last `=` is the result. */
function afterEquals(answer: string): string {
  const i = answer.lastIndexOf('=');
  return i >= 0 ? answer.slice(i + 1) : answer;
}

/** The one distinct value, else undefined (none, or two that differ). */
function single(values: readonly string[]): string | undefined {
  const distinct = new Set(values);
  return distinct.size === 1 ? values[0] : undefined;
}

/** A number written canonically, so `42.0`, `042` and `42` compare equal without binary floating point. */
function canonical(negative: boolean, whole: string, fraction: string): string {
  const w = whole.replace(/^0+(?=\d)/, '');
  const f = fraction.replace(/0+$/, '');
  const body = f === '' ? w : `${w}.${f}`;
  return negative && body !== '0' ? `-${body}` : body;
}

/**
 * A number in digits: grouped thousands must be in threes (`1,5` is no number here, rather than one), a number
 * glued to letters (`km2`, `x42`) is not read, and a `-` counts as a sign only when no digit precedes it (`5-3`).
 */
const DIGITS = /(?<![\p{L}\p{N}.,^])(?:(?<!\p{N})(-)\s?)?\$?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?!\p{N}|[.,]\p{N})/gu;

function findNumbers(text: string): string[] {
  const found: { value: string; index: number }[] = [];
  for (const m of text.matchAll(DIGITS))
    found.push({ value: canonical(m[1] !== undefined, m[2].replace(/,/g, ''), m[3] ?? ''), index: m.index });
  for (const w of findNumberWords(text)) found.push({ value: String(w.value), index: w.index });
  return found.sort((a, b) => a.index - b.index).map((f) => f.value);
}

/** The reference as a number when it is nothing but one (`42`, `-3`, `1,234`, `6.50`). */
function wholeNumber(ref: string): string | undefined {
  const m = /^(-)?\$?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?$/.exec(ref);
  return m ? canonical(m[1] !== undefined, m[2].replace(/,/g, ''), m[3] ?? '') : undefined;
}

const MONTH =
  '(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)';
const ORDINAL = '(?:st|nd|rd|th)?';

function monthNumber(name: string): number {
  const n = name.toLowerCase().slice(0, 3);
  return MONTHS.findIndex((m) => m.toLowerCase().startsWith(n)) + 1;
}

/**
 * Dates written year first (`2024-03-05`, `2024/3/5`) or with the month in words (`March 5, 2024`, `5th of March
 * 2024`). All-numeric dates with the day or month first (`03/05/2024`) are not read: which is which is ambiguous.
 */
function findDates(text: string): string[] {
  const out: { value: string; index: number }[] = [];
  const add = (index: number, year: string, month: number, day: string): void => {
    const date: CivilDate = { year: Number(year), month, day: Number(day) };
    if (isValidDate(date)) out.push({ value: isoDate(date), index });
  };
  for (const m of text.matchAll(/(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)/g)) add(m.index, m[1], Number(m[2]), m[3]);
  for (const m of text.matchAll(new RegExp(`\\b${MONTH}\\.?\\s+(\\d{1,2})${ORDINAL},?\\s+(\\d{4})(?!\\d)`, 'gi'))) {
    add(m.index, m[3], monthNumber(m[1]), m[2]);
  }
  for (const m of text.matchAll(new RegExp(`(?<!\\d)(\\d{1,2})${ORDINAL}\\s+(?:of\\s+)?${MONTH}\\.?,?\\s+(\\d{4})(?!\\d)`, 'gi'))) {
    add(m.index, m[3], monthNumber(m[2]), m[1]);
  }
  return out.sort((a, b) => a.index - b.index).map((d) => d.value);
}

/** A reference that is nothing but one written date (an imported set may spell its dates out). */
function onlyDate(ref: string): CivilDate | undefined {
  const dates = findDates(ref);
  if (dates.length !== 1) return undefined;
  const rest = ref.replace(new RegExp(`${MONTH}|\\d+${ORDINAL}|\\bof\\b|[\\s,./-]`, 'gi'), '');
  return rest === '' ? parseIsoDate(dates[0]) : undefined;
}

const LETTER_FORMS = [
  /^\(?([A-J])\)?$/i,
  /^\(?([A-J])[.):]\s+(.+)$/,
  /^(?:the\s+)?(?:correct\s+|right\s+|best\s+)?(?:answer|option|choice)(?:\s+is)?\s*:?\s*\(?([A-J])\)?(?:[.):,]\s*(.*))?$/i,
];

/** The one option the answer names, as its letter; undefined for none, two, or a hedge. */
function chosenLetter(answer: string, choices: readonly string[]): string | undefined {
  if (hedged(answer) || /\b[A-J]\s*(?:,|and|&)\s*\(?[A-J]\b/.test(answer)) return undefined;
  for (const form of LETTER_FORMS) {
    const m = form.exec(answer);
    if (!m) continue;
    const letter = m[1].toUpperCase();
    const text = m[2]?.trim();
    const index = letter.charCodeAt(0) - 65;
    // `B. food` must name B's own text, when it names one at all.
    if (text && choices[index] !== undefined && plainText(clean(text)) !== plainText(clean(choices[index]))) return undefined;
    return letter;
  }
  const named = choices.flatMap((c, i) => (plainText(clean(c)) === plainText(answer) ? [String.fromCharCode(65 + i)] : []));
  return named.length === 1 ? named[0] : undefined;
}

function yesOrNo(answer: string): 'yes' | 'no' | undefined {
  // `No, it does not` is a plain no; `yes or no`, `maybe` and `it depends` are no answer.
  if (/^(yes|no)\s+or\b|\b(either|maybe|perhaps|depends|unclear)\b/i.test(answer)) return undefined;
  const m = /^(yes|no|true|false)\b/i.exec(answer);
  if (!m) return undefined;
  return ['yes', 'true'].includes(m[1].toLowerCase()) ? 'yes' : 'no';
}

/** `\boxed{…}` (braces balanced) unwrapped, wherever it stands. */
function unboxed(text: string): string {
  const at = text.lastIndexOf('\\boxed{');
  if (at < 0) return text;
  let depth = 0;
  for (let i = at + 6; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return text.slice(at + 7, i);
  }
  return text;
}

/** A LaTeX answer without what does not change its value: dollars, spacing, sizing, `\text{}`, degrees, a final dot. */
function mathForm(text: string): string {
  return unboxed(text.normalize('NFKC'))
    .replace(/\$/g, '')
    .replace(/\\(?:left|right|displaystyle|!|,|;|:|quad|qquad)/g, '')
    .replace(/\\[dt]frac/g, '\\frac')
    .replace(/\\text\{([^{}]*)\}|\\mbox\{([^{}]*)\}/g, '$1$2')
    .replace(/\^\{?\\circ\}?|\\%|%|°/g, '')
    .replace(/\s+/g, '')
    .replace(/[.。]+$/, '');
}

/** A plain number or fraction as an exact rational [numerator, denominator]; undefined otherwise. */
function rational(text: string): [bigint, bigint] | undefined {
  const frac = /^(-)?\\frac\{?(-?\d+)\}?\{?(\d+)\}?$/.exec(text) ?? /^(-)?(-?\d+)\/(\d+)$/.exec(text);
  if (frac) {
    const d = BigInt(frac[3]);
    return d === 0n ? undefined : [BigInt(frac[2]) * (frac[1] ? -1n : 1n), d];
  }
  const dec = /^(-)?(\d+)(?:\.(\d+))?$/.exec(text.replace(/,(?=\d{3}\b)/g, ''));
  if (!dec) return undefined;
  const fraction = dec[3] ?? '';
  return [BigInt(`${dec[2]}${fraction}`) * (dec[1] ? -1n : 1n), 10n ** BigInt(fraction.length)];
}

function sameExpression(reply: string, reference: string): boolean {
  const ref = mathForm(reference);
  let answer = mathForm(reply);
  // `x=5` answers `5`; a reference that is itself an equation is compared whole.
  if (!ref.includes('=') && answer.includes('=')) answer = answer.slice(answer.lastIndexOf('=') + 1);
  if (answer === ref) return true;
  const [a, r] = [rational(answer), rational(ref)];
  return a !== undefined && r !== undefined && a[0] * r[1] === r[0] * a[1];
}

/**
 * What a reply answers, as the checker would compare it: two replies with the same key give the same answer (the
 * equal-cost arm's majority vote counts these). A letter for `choice`, yes/no, a reduced fraction or normalised
 * LaTeX for `math`; otherwise the one number, else the one date, else the plain text. Undefined: no answer to count
 * (a hedge, two letters, an empty reply).
 */
export function answerKey(reply: string, asked: Pick<Question, 'answerKind' | 'choices'> = {}): string | undefined {
  const final = extractFinalAnswer(reply);
  switch (asked.answerKind) {
    case 'choice':
      return chosenLetter(clean(final), asked.choices ?? []);
    case 'yes-no':
      return yesOrNo(clean(final));
    case 'math': {
      const form = mathForm(final);
      const value = form.includes('=') ? form.slice(form.lastIndexOf('=') + 1) : form;
      const r = rational(value);
      if (r) return `${r[0] / gcd(r[0], r[1])}/${r[1] / gcd(r[0], r[1])}`;
      return value === '' ? undefined : value;
    }
    default: {
      const answer = clean(final);
      if (answer === '' || hedged(answer)) return undefined;
      const number = single(findNumbers(afterEquals(answer)));
      if (number !== undefined) return `number ${number}`;
      const date = single(findDates(afterEquals(answer)));
      return date !== undefined ? `date ${date}` : `text ${plainText(answer)}`;
    }
  }
}

function gcd(a: bigint, b: bigint): bigint {
  let [x, y] = [a < 0n ? -a : a, b];
  while (y !== 0n) [x, y] = [y, x % y];
  return x === 0n ? 1n : x;
}
