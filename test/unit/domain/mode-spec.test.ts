import assert from 'node:assert/strict';
import { CATALOG } from '../../../engines/catalog';
import { modeTemplate, ModeSpecDocSchema, validateMode, VALIDATION_CODE_NAMES, type ValidationContext } from '../../../domain/mode-spec';
import type { ValidationCode } from '../../../domain/mode-validation-codes';
import { ModeConfigSchema, modeConfigHash } from '../../../domain/modes';
import { BASE_FIELD, editorSections, JSON_FIELD, specFromFields } from '../../../api/console/mode-fields';

/** Pure: the validation table, one refusing spec per code, over the real catalog. */

const UNAVAILABLE = 'bedrock/meta.llama3-1-8b-instruct';

function context(over: Partial<ValidationContext> = {}): ValidationContext {
  return {
    form: 'B',
    find: (id) => CATALOG.find((e) => e.id === id),
    canRun: (id) => id !== UNAVAILABLE,
    floor: { perMtokUsd: 0.05, surchargeUsd: 0.0005 },
    via: 'key',
    hasOrg: true,
    system: false,
    tickerTaken: (t) => t === 'TAKN' || t === 'TAKO',
    ...over,
  };
}

type Spec = Record<string, unknown>;
const template = (): Spec => modeTemplate();
const withField = (field: string, value: unknown) => (): Spec => ({ ...template(), [field]: value });
const rows = (byTier: Record<string, unknown>) => withField('seats_by_tier', byTier);
const staff = (over: Record<string, unknown>) => (): Spec => ({ ...template(), staff: { ...(template().staff as object), ...over } });
const PLUS = ['openai/gpt-4.1', 'anthropic/claude-sonnet-4', 'google/gemini-2.5-flash'];
const PRO = ['openai/gpt-5', 'anthropic/claude-opus-4-1', 'google/gemini-2.5-pro'];
const AUTO3 = [{ auto: true }, { auto: true }, { auto: true }];
const fixedRows = { experience: ['openai/gpt-4.1-mini'], plus: PLUS, pro: PRO };
const noAuto = (s: Spec): Spec => Object.fromEntries(Object.entries(s).filter(([k]) => k !== 'auto'));
/** The template without its explicit `skip_synthesis_when_converged`, which only a synthesis may set. */
const noSkip = (): Spec => Object.fromEntries(Object.entries(template()).filter(([k]) => k !== 'skip_synthesis_when_converged'));
/** The template's configuration hash before issue 52: a spec without `aggregation` keeps it. */
const TEMPLATE_HASH = '41d50383d2c1';

interface Case {
  code: ValidationCode;
  spec: () => Spec | unknown;
  ctx?: Partial<ValidationContext>;
  check?: (refusal: Record<string, unknown>) => void;
}

const CASES: Case[] = [
  // Seats
  { code: 'six_seats_required', spec: rows({ experience: ['openai/gpt-4.1-mini'], plus: PLUS.slice(0, 2) }) },
  { code: 'duplicate_seat_engine', spec: rows({ ...fixedRows, plus: ['openai/gpt-4.1', 'openai/gpt-4.1', 'google/gemini-2.5-flash'] }) },
  { code: 'seat_engine_not_found', spec: rows({ ...fixedRows, plus: ['openai/gpt-9', ...PLUS.slice(1)] }) },
  { code: 'seat_engine_above_tier', spec: rows({ ...fixedRows, plus: ['openai/gpt-5', ...PLUS.slice(1)] }) },
  { code: 'single_family_row', spec: rows({ ...fixedRows, plus: ['sim/alpha-plus', 'sim/beta-plus', 'sim/gamma-plus'] }) },
  { code: 'seat_selection_required', spec: () => noAuto({ ...template(), seats_by_tier: undefined }) },
  { code: 'seats_ambiguous', spec: () => ({ ...template(), seats: PLUS, tier: 'plus' }) },
  { code: 'engine_unavailable', spec: rows({ ...fixedRows, experience: [UNAVAILABLE] }) },
  // Seat rows by tier
  { code: 'seats_by_tier_invalid', spec: withField('seats_by_tier', [PLUS]) },
  { code: 'seat_tier_unknown', spec: rows({ ...fixedRows, ultra: PRO }) },
  {
    code: 'seat_tiers_not_contiguous',
    spec: () => noAuto({ ...template(), seats_by_tier: { experience: ['openai/gpt-4.1-mini'], pro: PRO }, staff: proStaff() }),
  },
  { code: 'seats_by_tier_needs_fixed', spec: rows({ ...fixedRows, experience: [{ auto: true }] }) },
  { code: 'seat_tiers_min_tier_mismatch', spec: withField('min_tier', 'plus') },
  {
    code: 'seat_tiers_below_staff',
    spec: () => noAuto({ ...template(), seats_by_tier: { experience: ['openai/gpt-4.1-mini'], plus: PLUS }, staff: proStaff() }),
  },
  { code: 'tier_required', spec: () => noAuto({ ...template(), seats_by_tier: undefined, seats: PLUS }) },
  // Staff
  { code: 'staff_role_unknown', spec: staff({ critic: { tier: 'plus', engine: 'openai/gpt-4.1' } }) },
  { code: 'staff_auto_not_allowed', spec: staff({ judge: { tier: 'plus', auto: true } }) },
  { code: 'staff_tiers_shape', spec: staff({ judge: 'anthropic/claude-sonnet-4' }) },
  { code: 'staff_tier_unknown', spec: staff({ judge: { tier: 'gold', engine: 'anthropic/claude-sonnet-4' } }) },
  { code: 'staff_tier_is_lowest', spec: staff({ judge: { tier: 'experience', engine: 'openai/gpt-4.1-mini' } }) },
  { code: 'staff_backup_without_primary', spec: staff({ judge: { tier: 'plus', backup: 'openai/gpt-4.1' } }) },
  { code: 'staff_backup_same_as_primary', spec: staff({ judge: { tier: 'plus', engine: 'openai/gpt-4.1', backup: 'openai/gpt-4.1' } }) },
  { code: 'staff_engine_above_tier', spec: staff({ judge: { tier: 'plus', engine: 'openai/gpt-5' } }) },
  // System modes
  { code: 'system_mode_seats', spec: rows({ ...fixedRows, experience: ['sim/alpha-experience'] }), ctx: { system: true } },
  {
    code: 'system_mode_needs_tiers',
    spec: () => noAuto({ ...template(), seats_by_tier: undefined, seats: PLUS, tier: 'plus' }),
    ctx: { system: true },
  },
  {
    code: 'system_mode_seats_incomplete',
    spec: () => noAuto({ ...template(), seats_by_tier: { experience: ['openai/gpt-4.1-mini'], plus: PLUS } }),
    ctx: { system: true, storedSystemTiers: ['experience', 'plus', 'pro'] },
    check: (refusal) => assert.deepEqual(refusal.tiers, ['pro']),
  },
  {
    code: 'system_mode_tier_dropped',
    spec: () => noAuto({ ...template(), min_tier: 'plus', seats_by_tier: { plus: PLUS, pro: PRO } }),
    ctx: { system: true, storedSystemTiers: ['experience', 'plus', 'pro'] },
  },
  // Auto seats
  { code: 'auto_needs_fixed_pool', spec: withField('auto', { family_diversity: 'distinct' }) },
  { code: 'auto_seats_mixed', spec: rows({ ...fixedRows, pro: ['openai/gpt-5', { auto: true }, { auto: true }] }) },
  { code: 'auto_rows_differ_by_tier', spec: rows({ experience: ['openai/gpt-4.1-mini'], plus: PLUS, pro: AUTO3 }) },
  {
    code: 'auto_seat_backup',
    spec: rows({
      experience: ['openai/gpt-4.1-mini'],
      plus: AUTO3,
      pro: [{ auto: true, backup: 'openai/gpt-5' }, { auto: true }, { auto: true }],
    }),
  },
  { code: 'auto_picked_needs_backup', spec: withField('auto', { pool: [...PLUS, 'bedrock/meta.llama3-3-70b-instruct', ...PRO] }) },
  {
    code: 'family_diversity_invalid',
    spec: withField('auto', { pool: (modeTemplate().auto as { pool: string[] }).pool, family_diversity: 'some' }),
  },
  {
    code: 'family_diversity_needs_auto',
    spec: () => ({ ...template(), seats_by_tier: fixedRows, auto: { pool: PRO, family_diversity: 'any' } }),
  },
  // Other settings
  { code: 'fidelity_retired', spec: withField('fidelity', 'max') },
  { code: 'fidelity_inert', spec: withField('fidelity', 'standard') },
  { code: 'invalid_value', spec: withField('critique', 'sometimes') },
  { code: 'quorum_invalid', spec: withField('quorum', 4), check: (r) => assert.equal(r.path, 'quorum') },
  { code: 'grace_without_quorum', spec: withField('grace_ms', 500), check: (r) => assert.equal(r.path, 'grace_ms') },
  {
    code: 'aggregation_invalid',
    spec: withField('aggregation', { method: 'average' }),
    check: (r) => assert.equal(r.path, 'aggregation.method'),
  },
  {
    code: 'aggregation_conflict',
    spec: () => ({ ...noSkip(), aggregation: { method: 'vote', first_wave: 2 }, quorum: 2 }),
    check: (r) => assert.equal(r.path, 'aggregation.first_wave'),
  },
  // Listing and price
  { code: 'description_too_long', spec: withField('description', 'x'.repeat(501)) },
  { code: 'use_when_invalid', spec: withField('use_when', '') },
  { code: 'use_when_too_long', spec: withField('use_when', 'y'.repeat(201)) },
  { code: 'price_override_not_allowed', spec: withField('api_commercial', { price_override_acknowledged: true }) },
  { code: 'ticker_required', spec: withField('ticker', undefined) },
  { code: 'ticker_invalid', spec: withField('ticker', 'ABC1') },
  { code: 'ticker_taken', spec: withField('ticker', 'TAKN'), check: (refusal) => assert.equal(refusal.suggested_ticker, 'TAKP') },
  { code: 'org_required', spec: template, ctx: { hasOrg: false } },
  { code: 'price_below_floor', spec: withField('fees', { per_mtok_usd: 0.01 }) },
  // Name and description
  { code: 'name_too_short', spec: withField('name', 'AB') },
  { code: 'name_too_long', spec: withField('name', 'N'.repeat(61)) },
  { code: 'name_bad_chars', spec: withField('name', 'Panel <b>') },
  { code: 'name_edge_punctuation', spec: withField('name', '-Panel') },
  { code: 'name_reserved', spec: withField('name', 'Quorum Pro') },
  { code: 'description_bad_chars', spec: withField('description', 'A <script> panel') },
  // Shape
  { code: 'invalid_request', spec: withField('rounds', 4) },
];

function proStaff(): Record<string, unknown> {
  return {
    judge: { tier: 'pro', engine: 'openai/gpt-5' },
    synthesis: { tier: 'pro', engine: 'google/gemini-2.5-pro' },
  };
}

describe('mode spec validation', () => {
  it('the template passes every rule and compiles to a stored ModeConfig', () => {
    const result = validateMode(template(), context());
    assert.deepEqual(result.refusals, []);
    assert.ok(result.ok);
    const config = ModeConfigSchema.parse(result.mode.config);
    assert.deepEqual(config.tiers.plus?.seats, PLUS);
    assert.deepEqual(config.tiers.plus?.backups, Array(3).fill('bedrock/meta.llama3-3-70b-instruct'));
    // Auto-pick: the first engine of each maker in pool order; the pool's spare backs every picked seat up.
    assert.deepEqual(config.tiers.pro?.seats, PRO);
    assert.deepEqual(config.tiers.pro?.backups, Array(3).fill('bedrock/meta.llama4-maverick-17b-instruct'));
    assert.deepEqual(config.providerFamilies, ['anthropic', 'bedrock', 'google', 'openai']);
    assert.equal(config.fees.perMtokInputUsd, 0.5);
    assert.equal(config.fees.surchargeByDepthMicros.deep, 10_000);
    assert.equal(result.mode.ticker, 'MYPN');
    ModeSpecDocSchema.parse(template());
  });

  it('has a refusing spec for every code in the table', () => {
    const covered = new Set(CASES.map((c) => c.code));
    assert.deepEqual(
      VALIDATION_CODE_NAMES.filter((code) => !covered.has(code)),
      [],
    );
  });

  for (const c of CASES) {
    it(`refuses with ${c.code}`, () => {
      const result = validateMode(c.spec(), context(c.ctx));
      assert.equal(result.ok, false);
      const refusal = result.refusals.find((r) => r.code === c.code);
      assert.ok(refusal, `expected ${c.code}, got ${JSON.stringify(result.refusals)}`);
      assert.ok(refusal.message.length > 10);
      c.check?.(refusal as unknown as Record<string, unknown>);
    });
  }

  it('a quorum compiles with its grace (2 s when left out); a spec without one compiles as before', () => {
    const compiled = (spec: Spec): unknown => {
      const result = validateMode(spec, context());
      assert.deepEqual(result.refusals, []);
      return result.ok ? ModeConfigSchema.parse(result.mode.config).quorum : 'refused';
    };
    assert.deepEqual(compiled({ ...template(), quorum: 2, grace_ms: 1_500 }), { seats: 2, graceMs: 1_500 });
    assert.deepEqual(compiled({ ...template(), quorum: 3 }), { seats: 3, graceMs: 2_000 });
    assert.deepEqual(compiled({ ...template(), quorum: 2, grace_ms: 0 }), { seats: 2, graceMs: 0 });
    const plain = validateMode(template(), context());
    assert.ok(plain.ok);
    assert.equal('quorum' in plain.mode.config, false, 'no key at all, so the configuration hash of a mode without one is unchanged');
    ModeSpecDocSchema.parse({ ...template(), quorum: 2, grace_ms: 1_500 });
  });

  for (const [label, over, code, path] of [
    ['a quorum of one', { quorum: 1 }, 'quorum_invalid', 'quorum'],
    ['a fractional quorum', { quorum: 2.5 }, 'quorum_invalid', 'quorum'],
    ['a quorum given as text', { quorum: '2' }, 'quorum_invalid', 'quorum'],
    ['a quorum on a mode that is always express', { quorum: 2, express: 'always' }, 'quorum_invalid', 'quorum'],
    ['a negative grace', { quorum: 2, grace_ms: -1 }, 'invalid_request', 'grace_ms'],
    ['a grace past 120 s', { quorum: 2, grace_ms: 120_001 }, 'invalid_request', 'grace_ms'],
    ['a fractional grace', { quorum: 2, grace_ms: 0.5 }, 'invalid_request', 'grace_ms'],
  ] as const) {
    it(`refuses ${label} (${code} at ${path})`, () => {
      const result = validateMode({ ...template(), ...over }, context());
      assert.deepEqual(
        result.refusals.map((r) => [r.code, r.path]),
        [[code, path]],
      );
    });
  }

  it('an aggregation compiles with its defaults filled in; a spec without one compiles as before, to the same hash', () => {
    const compiled = (spec: Spec): unknown => {
      const result = validateMode(spec, context());
      assert.deepEqual(result.refusals, []);
      return result.ok ? ModeConfigSchema.parse(result.mode.config).aggregation : 'refused';
    };
    const agg = (block: Record<string, unknown>): Spec => ({ ...noSkip(), aggregation: block });
    assert.deepEqual(compiled(agg({ method: 'vote' })), { method: 'vote', prose: 'verbatim', tieBreak: 'judge', ballot: true });
    assert.deepEqual(compiled(agg({ method: 'select' })), { method: 'select', prose: 'verbatim', tieBreak: 'judge', ballot: false });
    assert.deepEqual(compiled(agg({ method: 'synthesis' })), {
      method: 'synthesis',
      prose: 'verbatim',
      tieBreak: 'judge',
      ballot: false,
    });
    assert.deepEqual(compiled(agg({ method: 'vote', prose: 'pinned', tie_break: 'first', ballot: false, first_wave: 2 })), {
      method: 'vote',
      prose: 'pinned',
      tieBreak: 'first',
      ballot: false,
      firstWave: 2,
    });
    assert.deepEqual(compiled(agg({ method: 'select', prose: 'pinned', first_wave: 2 })), {
      method: 'select',
      prose: 'pinned',
      tieBreak: 'judge',
      ballot: false,
      firstWave: 2,
    });
    // A synthesis may keep the template's explicit skip: it has a synthesis to skip.
    assert.equal((compiled({ ...template(), aggregation: { method: 'synthesis' } }) as { method: string }).method, 'synthesis');
    for (const spec of [template(), noSkip()]) {
      const plain = validateMode(spec, context());
      assert.ok(plain.ok);
      assert.equal('aggregation' in plain.mode.config, false, 'no key at all without the block');
      assert.equal(modeConfigHash(plain.mode.config), TEMPLATE_HASH, 'the configuration hash of a mode without one is unchanged');
    }
    const voting = validateMode(agg({ method: 'vote' }), context());
    assert.ok(voting.ok);
    assert.notEqual(modeConfigHash(voting.mode.config), TEMPLATE_HASH, 'an aggregation is a different panel');
    ModeSpecDocSchema.parse(agg({ method: 'vote', prose: 'pinned', tie_break: 'first', ballot: false, first_wave: 2 }));
    assert.equal(ModeSpecDocSchema.safeParse(agg({ method: 'vote', extra: 1 })).success, false, 'the documented block is closed too');
  });

  for (const [label, over, expected] of [
    ['an aggregation that is not an object', { aggregation: 'vote' }, [['aggregation_invalid', 'aggregation']]],
    ['an aggregation without a method', { aggregation: { prose: 'verbatim' } }, [['aggregation_invalid', 'aggregation.method']]],
    ['an unknown method', { aggregation: { method: 'average' } }, [['aggregation_invalid', 'aggregation.method']]],
    ['an unknown key', { aggregation: { method: 'vote', quorum: 2 } }, [['aggregation_invalid', 'aggregation.quorum']]],
    ['an unknown prose', { aggregation: { method: 'vote', prose: 'free' } }, [['aggregation_invalid', 'aggregation.prose']]],
    [
      'pinned prose with a synthesis, which writes already',
      { aggregation: { method: 'synthesis', prose: 'pinned' } },
      [['aggregation_invalid', 'aggregation.prose']],
    ],
    ['an unknown tie break', { aggregation: { method: 'vote', tie_break: 'coin' } }, [['aggregation_invalid', 'aggregation.tie_break']]],
    [
      'a tie break without a vote',
      { aggregation: { method: 'select', tie_break: 'first' } },
      [['aggregation_invalid', 'aggregation.tie_break']],
    ],
    ['a ballot given as text', { aggregation: { method: 'vote', ballot: 'yes' } }, [['aggregation_invalid', 'aggregation.ballot']]],
    ['a ballot without a vote', { aggregation: { method: 'synthesis', ballot: false } }, [['aggregation_invalid', 'aggregation.ballot']]],
    ['a first wave of three', { aggregation: { method: 'vote', first_wave: 3 } }, [['aggregation_invalid', 'aggregation.first_wave']]],
    [
      'a first wave given as text',
      { aggregation: { method: 'vote', first_wave: '2' } },
      [['aggregation_invalid', 'aggregation.first_wave']],
    ],
    [
      'an aggregation on a mode that is always express',
      { aggregation: { method: 'vote' }, express: 'always' },
      [['aggregation_conflict', 'aggregation']],
    ],
    [
      'a first wave with a quorum',
      { aggregation: { method: 'synthesis', first_wave: 2 }, quorum: 2 },
      [['aggregation_conflict', 'aggregation.first_wave']],
    ],
    [
      'skip_synthesis_when_converged with a vote',
      { aggregation: { method: 'vote' }, skip_synthesis_when_converged: true },
      [['aggregation_conflict', 'skip_synthesis_when_converged']],
    ],
    [
      'skip_synthesis_when_converged (false) with a selection',
      { aggregation: { method: 'select' }, skip_synthesis_when_converged: false },
      [['aggregation_conflict', 'skip_synthesis_when_converged']],
    ],
    [
      'every wrong key at once, each at its path',
      { aggregation: { method: 'select', prose: 'pinned!', tie_break: 'judge', ballot: true, first_wave: 1, x: 0 } },
      [
        ['aggregation_invalid', 'aggregation.x'],
        ['aggregation_invalid', 'aggregation.prose'],
        ['aggregation_invalid', 'aggregation.tie_break'],
        ['aggregation_invalid', 'aggregation.ballot'],
        ['aggregation_invalid', 'aggregation.first_wave'],
      ],
    ],
  ] as const) {
    it(`refuses ${label} (${expected.map(([code, path]) => `${code} at ${path}`).join(', ')})`, () => {
      const result = validateMode({ ...noSkip(), ...over }, context());
      assert.deepEqual(
        result.refusals.map((r) => [r.code, r.path]),
        expected,
      );
    });
  }

  it('returns every refusal at once, price_override_not_allowed first, each with its path', () => {
    const spec = { ...template(), name: 'x', ticker: 'abc', rounds: 0, api_commercial: { price_override_acknowledged: true } };
    const result = validateMode(spec, context());
    assert.deepEqual(
      result.refusals.map((r) => [r.code, r.path]),
      [
        ['price_override_not_allowed', 'api_commercial.price_override_acknowledged'],
        ['name_too_short', 'name'],
        ['ticker_invalid', 'ticker'],
        ['invalid_request', 'rounds'],
      ],
    );
  });

  it('a person in the builder may acknowledge a price override; Form A needs no ticker', () => {
    const spec = { ...template(), api_commercial: { price_override_acknowledged: true } };
    assert.equal(validateMode(spec, context({ via: 'person' })).ok, true);
    const noTicker = { ...template(), ticker: undefined };
    const a = validateMode(noTicker, context({ form: 'A' }));
    assert.ok(a.ok);
    assert.equal(a.mode.ticker, undefined);
  });

  it('a flat row serves one tier; the express lane then seats its first engine', () => {
    const spec = noAuto({ ...template(), seats_by_tier: undefined, seats: PLUS, tier: 'plus' });
    const result = validateMode(spec, context());
    assert.ok(result.ok, JSON.stringify(result.refusals));
    assert.deepEqual(result.mode.config.tiers, { experience: { seats: ['openai/gpt-4.1'] }, plus: { seats: PLUS } });
  });
});

describe("the builder's aggregation fields", () => {
  const sections = editorSections('B');
  /** The form a page rendered from `spec` posts: every field as shown (nested, as the body parser nests dotted names). */
  function posted(spec: Spec, edits: Record<string, string> = {}): Spec {
    const body: Spec = { [BASE_FIELD]: JSON.stringify(spec), [JSON_FIELD]: JSON.stringify(spec) };
    const set = (name: string, value: string): void => {
      const keys = name.split('.');
      let at = body;
      for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Spec;
      at[keys[keys.length - 1]] = value;
    };
    for (const section of [...sections, ...sections.flatMap((s) => s.sections ?? [])])
      for (const unit of section.units) {
        const values = unit.read(spec);
        unit.fields.forEach((f, i) => set(f.name, edits[f.name] ?? values[i]));
      }
    return body;
  }

  it('show a spec with an aggregation and post it back unchanged', () => {
    const spec = { ...noSkip(), aggregation: { method: 'vote', prose: 'pinned', tie_break: 'first', ballot: false, first_wave: 2 } };
    assert.deepEqual(specFromFields(sections, posted(spec)).spec, spec);
    assert.deepEqual(specFromFields(sections, posted(noSkip())).spec, noSkip());
  });

  it('set the block with typed values, and drop it when every field is blanked', () => {
    const edits = {
      'aggregation.method': 'vote',
      'aggregation.tie_break': 'first',
      'aggregation.ballot': 'false',
      'aggregation.first_wave': '2',
      skip_synthesis_when_converged: '',
    };
    const { spec } = specFromFields(sections, { ...posted(template(), edits), [JSON_FIELD]: '' });
    assert.deepEqual(spec.aggregation, { method: 'vote', tie_break: 'first', ballot: false, first_wave: 2 });
    assert.equal('skip_synthesis_when_converged' in spec, false);
    const result = validateMode(spec, context());
    assert.ok(result.ok, JSON.stringify(result.refusals));
    assert.deepEqual(result.mode.config.aggregation, { method: 'vote', prose: 'verbatim', tieBreak: 'first', ballot: false, firstWave: 2 });
    const blanked = Object.fromEntries(['method', 'tie_break', 'ballot', 'first_wave'].map((k) => [`aggregation.${k}`, '']));
    const { spec: without } = specFromFields(sections, { ...posted(spec, blanked), [JSON_FIELD]: '' });
    assert.equal('aggregation' in without, false, 'no empty block is left behind');
  });
});
