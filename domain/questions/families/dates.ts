import { addDays, daysBetween, isoDate, longDate, weekdayOf, civilDate, dayNumber, type CivilDate } from '../calendar';
import { plural, type Drawn, type Family } from '../family';
import type { Rng } from '../rng';
import type { Bucket } from '../types';

/** Difficulty: how far apart the dates are (so whether months, leap days and years are crossed), and whether to count back. */
const PARAMS: Readonly<Record<Bucket, { minDays: number; maxDays: number; backwards: boolean }>> = {
  light: { minDays: 2, maxDays: 20, backwards: false },
  medium: { minDays: 30, maxDays: 250, backwards: true },
  hard: { minDays: 300, maxDays: 2500, backwards: true },
};

const FIRST_DAY = dayNumber({ year: 1990, month: 1, day: 1 });
const LAST_DAY = dayNumber({ year: 2039, month: 12, day: 31 });

/** Both spellings appear, so a model must read either. */
function shown(date: CivilDate, long: boolean): string {
  return long ? longDate(date) : isoDate(date);
}

export interface ShiftSpec {
  start: CivilDate;
  /** Negative counts back. */
  days: number;
  longForm: boolean;
}

export function shiftedDate({ start, days, longForm }: ShiftSpec): Drawn {
  const direction = days < 0 ? 'before' : 'after';
  return {
    question: `What date is ${plural(Math.abs(days), 'day')} ${direction} ${shown(start, longForm)}? Answer with the date in YYYY-MM-DD format.`,
    answer: isoDate(addDays(start, days)),
  };
}

export interface BetweenSpec {
  from: CivilDate;
  to: CivilDate;
  longForm: boolean;
}

export function daysBetweenQuestion({ from, to, longForm }: BetweenSpec): Drawn {
  return {
    question:
      `How many days pass from ${shown(from, longForm)} to ${shown(to, longForm)}? ` +
      `(From a date to the next day is one day.) Answer with the number only.`,
    answer: String(daysBetween(from, to)),
  };
}

export function weekdayQuestion({ start, days, longForm }: ShiftSpec): Drawn {
  const direction = days < 0 ? 'before' : 'after';
  return {
    question:
      `${shown(start, longForm)} is a ${weekdayOf(start)}. ` +
      `What day of the week is ${plural(Math.abs(days), 'day')} ${direction} it? Answer with the name of the day only.`,
    answer: weekdayOf(addDays(start, days)),
  };
}

function drawShift(rng: Rng, bucket: Bucket): ShiftSpec {
  const p = PARAMS[bucket];
  const size = rng.int(p.minDays, p.maxDays);
  const days = p.backwards && rng.chance(0.4) ? -size : size;
  // The start is drawn so the result also stays within 1990–2039.
  const start = civilDate(rng.int(FIRST_DAY + p.maxDays, LAST_DAY - p.maxDays));
  return { start, days, longForm: rng.chance(0.5) };
}

function drawBetween(rng: Rng, bucket: Bucket): BetweenSpec {
  const { start, days, longForm } = drawShift(rng, bucket);
  const end = addDays(start, Math.abs(days));
  return { from: days < 0 ? addDays(start, days) : start, to: days < 0 ? start : end, longForm };
}

export const dates: Family = {
  name: 'dates',
  templates: [
    { name: 'shift', make: (rng, bucket) => shiftedDate(drawShift(rng, bucket)) },
    { name: 'between', make: (rng, bucket) => daysBetweenQuestion(drawBetween(rng, bucket)) },
    { name: 'weekday', make: (rng, bucket) => weekdayQuestion(drawShift(rng, bucket)) },
  ],
};
