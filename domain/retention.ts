/**
 * Transcript retention (issue 41 item 5): an organisation's seat texts, answers and run answers are blanked this
 * many days after the call ended; money and every figure of the receipt stay. Zero: nothing of the text is stored
 * past the call (the caller gets the answer in the response; the receipt holds the figures only).
 */
export const DEFAULT_RETENTION_DAYS = 30;
export const MAX_RETENTION_DAYS = 3650;

/** Why a receipt's texts are gone: its age, its owner's DELETE, or an organisation that keeps none. */
export type TranscriptDeletedReason = 'retention' | 'deleted' | 'zero_retention';

export const TRANSCRIPT_DELETED_NOTE: Readonly<Record<TranscriptDeletedReason, string>> = {
  retention: "The texts of this call were deleted at the end of the organisation's transcript retention; the figures remain.",
  deleted: "The texts of this call were deleted at the organisation's request; the figures remain.",
  zero_retention: 'The organisation keeps no transcripts: the texts of this call were never stored; the figures remain.',
};

/** The `balance.low` threshold when the owner set none: $2 (the trial credit is $5). */
export const DEFAULT_LOW_BALANCE_MICROS = 2_000_000n;
