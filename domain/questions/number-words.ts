/**
 * English number words for whole numbers below one million: written (`forty-two`) and read back from a reply,
 * with or without `and` (`one hundred and five`) and hyphens, after `minus` or `negative` for a negative number.
 */

const UNITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'] as const;
const TEENS = ['ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'] as const;
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'] as const;

/** The largest magnitude read or written. */
export const MAX_NUMBER_WORDS = 999_999;

export function numberToWords(n: number): string {
  if (!Number.isSafeInteger(n) || Math.abs(n) > MAX_NUMBER_WORDS) throw new RangeError(`numberToWords: ${n} out of range`);
  if (n < 0) return `minus ${numberToWords(-n)}`;
  if (n === 0) return 'zero';
  const parts: string[] = [];
  const thousands = Math.floor(n / 1000);
  const rest = n % 1000;
  if (thousands > 0) parts.push(`${below1000(thousands)} thousand`);
  if (rest > 0) parts.push(below1000(rest));
  return parts.join(' ');
}

function below1000(n: number): string {
  const hundreds = Math.floor(n / 100);
  const rest = n % 100;
  const parts: string[] = [];
  if (hundreds > 0) parts.push(`${UNITS[hundreds]} hundred`);
  if (rest > 0) parts.push(below100(rest));
  return parts.join(' ');
}

function below100(n: number): string {
  if (n < 10) return UNITS[n];
  if (n < 20) return TEENS[n - 10];
  const tens = TENS[Math.floor(n / 10)];
  return n % 10 === 0 ? tens : `${tens}-${UNITS[n % 10]}`;
}

const SMALL = new Map<string, number>([
  ...UNITS.map((w, i) => [w, i] as const),
  ...TEENS.map((w, i) => [w, i + 10] as const),
  ...TENS.slice(2).map((w, i) => [w, (i + 2) * 10] as const),
]);

/** One word-number found in a text: its value and where it starts and ends. */
export interface FoundWordNumber {
  value: number;
  index: number;
  end: number;
}

/**
 * Every number written in words in `text`, in order. A run of number words is read greedily as one number
 * (`two hundred and five` is 205); words that cannot continue it (`one two`) start a new number.
 */
export function findNumberWords(text: string): FoundWordNumber[] {
  const tokens: { word: string; index: number; end: number }[] = [];
  for (const m of text.toLowerCase().matchAll(/[a-z]+/g)) tokens.push({ word: m[0], index: m.index, end: m.index + m[0].length });
  const out: FoundWordNumber[] = [];
  let i = 0;
  while (i < tokens.length) {
    const negative = (tokens[i].word === 'minus' || tokens[i].word === 'negative') && i + 1 < tokens.length;
    const start = negative ? i + 1 : i;
    const read = readNumber(tokens, start, text);
    if (read) {
      out.push({ value: negative ? -read.value : read.value, index: tokens[i].index, end: tokens[read.next - 1].end });
      i = read.next;
    } else i++;
  }
  return out;
}

interface Token {
  word: string;
  index: number;
  end: number;
}

/** Between two tokens of one number only spaces or one hyphen may stand (`forty-two`, `forty two`), never a comma. */
function joined(text: string, a: Token, b: Token): boolean {
  return /^(\s+|-)$/.test(text.slice(a.end, b.index));
}

/** number := below1000 [thousand [and] [below1000]] */
function readNumber(tokens: readonly Token[], i: number, text: string): { value: number; next: number } | undefined {
  const first = readBelow1000(tokens, i, text);
  if (!first) return undefined;
  let { value, next } = first;
  if (next < tokens.length && tokens[next].word === 'thousand' && joined(text, tokens[next - 1], tokens[next])) {
    value *= 1000;
    next++;
    let j = next;
    if (j < tokens.length && tokens[j].word === 'and' && joined(text, tokens[j - 1], tokens[j])) j++;
    if (j < tokens.length && joined(text, tokens[j - 1], tokens[j])) {
      const rest = readBelow1000(tokens, j, text);
      if (rest) {
        value += rest.value;
        next = rest.next;
      }
    }
  }
  return { value, next };
}

/** below1000 := small [hundred [and] [below100]] | below100, where small is 1–9 before `hundred`. */
function readBelow1000(tokens: readonly Token[], i: number, text: string): { value: number; next: number } | undefined {
  const head = readBelow100(tokens, i, text);
  if (!head) return undefined;
  let { value, next } = head;
  if (value >= 1 && value <= 9 && next < tokens.length && tokens[next].word === 'hundred' && joined(text, tokens[next - 1], tokens[next])) {
    value *= 100;
    next++;
    let j = next;
    if (j < tokens.length && tokens[j].word === 'and' && joined(text, tokens[j - 1], tokens[j])) j++;
    if (j < tokens.length && joined(text, tokens[j - 1], tokens[j])) {
      const rest = readBelow100(tokens, j, text);
      if (rest && rest.value > 0) {
        value += rest.value;
        next = rest.next;
      }
    }
  }
  return { value, next };
}

/** below100 := tens [unit] | teen | unit (a tens word may take a unit after a hyphen or a space). */
function readBelow100(tokens: readonly Token[], i: number, text: string): { value: number; next: number } | undefined {
  const v = i < tokens.length ? SMALL.get(tokens[i].word) : undefined;
  if (v === undefined) return undefined;
  if (v >= 20 && i + 1 < tokens.length && joined(text, tokens[i], tokens[i + 1])) {
    const unit = SMALL.get(tokens[i + 1].word);
    if (unit !== undefined && unit >= 1 && unit <= 9) return { value: v + unit, next: i + 2 };
  }
  return { value: v, next: i + 1 };
}
