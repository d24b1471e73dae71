/** The deployment's presentation of the one service (spec conventions; DESIGN §9). */
export const FORMS = ['A', 'B'] as const;
export type Form = (typeof FORMS)[number];
