/** The deployment's presentation of the one service (spec conventions; DESIGN §9). */
export const FORMS = ['A', 'B'] as const;
export type Form = (typeof FORMS)[number];

/** What each Form calls the run buckets (spec 02: Form B names them by difficulty, `easy` for `light`). */
export const BUCKET_NAMES = {
  A: { light: 'light', medium: 'medium', hard: 'hard' },
  B: { light: 'easy', medium: 'medium', hard: 'hard' },
} as const satisfies Record<Form, Record<'light' | 'medium' | 'hard', string>>;
