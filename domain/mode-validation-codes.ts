/**
 * The one table of mode-spec validation codes (spec 02 "Validation codes", plus the name, description, price and
 * ticker codes of its MCP server codes), in the style of `errors.ts`. Each code carries its area, its HTTP status
 * when it is the `error.code` of a refused release, and its rule in one line: where the spec names a code without
 * its rule, the line is the rule we chose. `validateMode` refuses with these and nothing else.
 */
export type ValidationArea =
  | 'seats'
  | 'seat_rows'
  | 'staff'
  | 'system_modes'
  | 'auto_seats'
  | 'other_settings'
  | 'listing_and_price'
  | 'name_and_description'
  | 'shape';

export interface ValidationCodeSpec {
  area: ValidationArea;
  status: number;
  rule: string;
}

const v = (area: ValidationArea, rule: string, status = 400): ValidationCodeSpec => ({ area, status, rule });

export const VALIDATION_CODES = {
  // Seats
  six_seats_required: v('seats', 'Every panel row (plus, pro) seats exactly three engines, six with both; the experience row seats one.'),
  duplicate_seat_engine: v('seats', 'One engine sits at most once in a row.'),
  seat_engine_not_found: v('seats', 'Every engine named (seat, backup, auto pool, staff) is in the catalog (`list_engines`).'),
  seat_engine_above_tier: v('seats', "A seat's engine is of its row's tier or below: a pro engine does not sit in a plus row."),
  single_family_row: v('seats', 'The fixed seats of a panel row come from at least two engine makers.'),
  seat_selection_required: v('seats', 'The spec seats its engines: `seats_by_tier`, or `seats` with `tier`.'),
  seats_ambiguous: v('seats', 'The spec gives `seats_by_tier` or `seats`, not both.'),
  engine_unavailable: v('seats', 'Every engine named can run here now (a service key, one of your own keys, or a development stand-in).'),
  // Seat rows by tier
  seats_by_tier_invalid: v('seat_rows', '`seats_by_tier` is an object of rows (arrays of seats) keyed by tier.'),
  seat_tier_unknown: v('seat_rows', 'A row is keyed `experience`, `plus` or `pro`.'),
  seat_tiers_not_contiguous: v(
    'seat_rows',
    'The tiers with rows have no gap between the lowest and the highest (no experience and pro without plus).',
  ),
  seats_by_tier_needs_fixed: v('seat_rows', 'The experience row is the express seat: one fixed engine; auto-pick fills panel rows only.'),
  seat_tiers_min_tier_mismatch: v('seat_rows', '`min_tier`, when given, is the lowest tier that has a row.'),
  seat_tiers_below_staff: v(
    'seat_rows',
    'The judge and synthesis tiers are not above the highest panel row: staff may not outrank the panel.',
  ),
  tier_required: v('seat_rows', 'A flat `seats` row and every staff entry name their `tier`.'),
  // Staff
  staff_role_unknown: v('staff', 'Staff roles are `judge`, `synthesis` and `classifier`; judge and synthesis are required.'),
  staff_auto_not_allowed: v('staff', 'Staff engines are named; auto-pick is for seats.'),
  staff_tiers_shape: v(
    'staff',
    'A staff entry is `{tier, engine, backup?}` (the classifier takes no backup: the heuristic is its backup).',
  ),
  staff_tier_unknown: v('staff', "A staff entry's `tier` is `experience`, `plus` or `pro`."),
  staff_tier_is_lowest: v(
    'staff',
    'Judge and synthesis sit above the lowest tier (experience): the classifier alone may be an experience engine.',
  ),
  staff_backup_without_primary: v('staff', 'A staff backup needs its primary `engine`.'),
  staff_backup_same_as_primary: v('staff', 'A staff backup is another engine than its primary.'),
  staff_engine_above_tier: v('staff', "A staff engine (and its backup) is of the entry's tier or below."),
  // System modes
  system_mode_seats: v('system_modes', 'A platform mode seats real engines only: no `sim/` engine is offered to paying callers.'),
  system_mode_needs_tiers: v(
    'system_modes',
    'A new platform mode with chosen seats sets them per tier (`seats_by_tier`) or auto-picks them.',
  ),
  system_mode_seats_incomplete: v(
    'system_modes',
    'A save keeps a row for every tier the stored platform mode serves; `tiers` lists those left without one.',
  ),
  system_mode_tier_dropped: v(
    'system_modes',
    '`min_tier` may not rise above the lowest tier the stored platform mode serves: its callers on that tier would lose it.',
  ),
  // Auto seats
  auto_needs_fixed_pool: v('auto_seats', 'Auto seats pick from `auto.pool`, a list of named engines.'),
  auto_seats_mixed: v('auto_seats', 'A row is all auto seats or all fixed seats.'),
  auto_rows_differ_by_tier: v('auto_seats', 'Auto-pick fills every panel row or none: one auto row and one fixed row is refused.'),
  auto_seat_backup: v('auto_seats', "An auto seat names no backup: its backup is the pool's next unpicked engine of the tier."),
  auto_picked_needs_backup: v(
    'auto_seats',
    "The pool holds more engines of each auto row's tier than the row has seats, so every picked seat has a backup.",
  ),
  family_diversity_invalid: v(
    'auto_seats',
    '`auto.family_diversity` is `distinct` or `any`, and the pool has enough makers per tier for `distinct`.',
  ),
  family_diversity_needs_auto: v('auto_seats', '`auto.family_diversity` is set only when some seat is auto.'),
  // Other settings
  fidelity_retired: v('other_settings', '`fidelity` values `high` and `max` were retired: rounds and critique set the depth now.'),
  fidelity_inert: v('other_settings', '`fidelity` no longer changes anything; drop it.'),
  quorum_invalid: v(
    'other_settings',
    '`quorum` is a whole number from 2 to a panel row\'s seats (3), on a mode with a panel (not `express: "always"`).',
  ),
  grace_without_quorum: v('other_settings', '`grace_ms` is set only with a `quorum`: it is the grace the quorum gives late seats.'),
  aggregation_invalid: v(
    'other_settings',
    '`aggregation` is `{method, prose?, tie_break?, ballot?, first_wave?}`: `method` synthesis, select or vote; `prose` verbatim or pinned (pinned not with synthesis, which writes already); `tie_break` judge or first and `ballot` true or false, both only with vote; `first_wave` 2.',
  ),
  aggregation_conflict: v(
    'other_settings',
    '`aggregation` is not on a mode that is always express (no panel); its `first_wave` is not with a `quorum`; a method other than synthesis leaves `skip_synthesis_when_converged` unset.',
  ),
  invalid_value: v(
    'other_settings',
    'An enumerated setting (critique, grounding, express, skip_synthesis_when_converged) has a value it takes.',
  ),
  // Listing and price
  description_too_long: v('listing_and_price', 'A description is at most 500 characters.'),
  use_when_invalid: v('listing_and_price', '`use_when` is a non-empty string without `<`, `>` or control characters.'),
  use_when_too_long: v('listing_and_price', '`use_when` is at most 200 characters.'),
  price_override_not_allowed: v(
    'listing_and_price',
    '`api_commercial.price_override_acknowledged` is for a person in the builder; a key or app sets any price at or above the floor without it.',
  ),
  ticker_required: v('listing_and_price', 'Form B names modes by ticker: the spec gives the four-letter mode part.'),
  ticker_invalid: v('listing_and_price', 'A ticker is exactly four letters A to Z.'),
  ticker_taken: v('listing_and_price', "The ticker is another of the organisation's modes; `suggested_ticker` is a free one.", 409),
  org_required: v('listing_and_price', 'A mode belongs to an organisation: the author has one.'),
  price_below_floor: v('listing_and_price', "Every fee is at or above the price floor (the price slider's lowest setting)."),
  // Name and description
  name_too_short: v('name_and_description', 'A name has at least 3 characters.'),
  name_too_long: v('name_and_description', 'A name has at most 60 characters.'),
  name_bad_chars: v('name_and_description', "A name uses only letters, numbers, spaces and - ' & . ,"),
  name_edge_punctuation: v('name_and_description', 'A name starts and ends with a letter or number.'),
  name_reserved: v(
    'name_and_description',
    'A name is not reserved: it does not start with "Quorum" and is not system, admin, official or lab.',
  ),
  description_bad_chars: v('name_and_description', 'A description has no `<`, `>` or control character (newlines and tabs are fine).'),
  // Shape: a check with no code of its own (spec: "such as a round count out of range").
  invalid_request: v(
    'shape',
    'Every other rule of the spec schema: field types, ranges (rounds 1-3, fees, ceiling, grace_ms 0-120000) and unknown fields.',
  ),
} as const satisfies Record<string, ValidationCodeSpec>;

export type ValidationCode = keyof typeof VALIDATION_CODES;

/** One refusal: its code, a message an author can act on, and the JSON path of the field; extras as the spec names them. */
export interface Refusal {
  code: ValidationCode;
  message: string;
  path: string;
  /** `system_mode_seats_incomplete`: the tiers left without rows. */
  tiers?: string[];
  /** `ticker_taken`: a free ticker. */
  suggested_ticker?: string;
}
