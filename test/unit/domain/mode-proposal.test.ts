import assert from 'node:assert/strict';
import { designMode, proposalContext, type ProposalEngine, type ProposalRequest, type ProposedSpec } from '../../../domain/mode-proposal';
import { validateMode } from '../../../domain/mode-spec';
import { TIER_RANK, TIERS, type Tier } from '../../../domain/modes';
import type { Form } from '../../../domain/form';
import { CATALOG } from '../../../engines/catalog';
import type { EngineSpec } from '../../../engines/types';

/** Pure: proposals over the real catalog, each checked against the rules a save runs. */

const FLOOR = { perMtokUsd: 0.05, surchargeUsd: 0.0005 };
type Usable = (e: EngineSpec) => boolean;
const ALL: Usable = () => true;
const families =
  (...names: string[]): Usable =>
  (e) =>
    e.family === 'sim' || names.includes(e.family);

/** A second anthropic engine in pro, dearer than all but Opus: the dearest three engines would seat anthropic twice. */
const SECOND_ANTHROPIC_PRO: ProposalEngine = {
  id: 'anthropic/claude-second',
  family: 'anthropic',
  maker: 'anthropic',
  tier: 'pro',
  inputUsdPerMtok: 10,
  outputUsdPerMtok: 50,
  usable: true,
};

function engines(usable: Usable): ProposalEngine[] {
  return CATALOG.map((e) => ({
    id: e.id,
    family: e.family,
    maker: e.maker,
    tier: e.tier,
    inputUsdPerMtok: e.inputUsdPerMtok,
    outputUsdPerMtok: e.outputUsdPerMtok,
    usable: usable(e),
  }));
}

type RequestOver = Partial<ProposalRequest> & { usable?: Usable; extra?: ProposalEngine[] };

function request(over: RequestOver = {}): ProposalRequest {
  const { usable = ALL, extra = [], ...rest } = over;
  return {
    description: 'A general helper for the team',
    tier: 'pro',
    engines: [...engines(usable), ...extra],
    floor: FLOOR,
    form: 'B',
    ...rest,
  };
}

function propose(req: ProposalRequest): Extract<ReturnType<typeof designMode>, { ok: true }> {
  const result = designMode(req);
  assert.ok(result.ok, JSON.stringify(result));
  return result;
}

const engine = (id: string): ProposalEngine => {
  const found = [...engines(ALL), SECOND_ANTHROPIC_PRO].find((e) => e.id === id);
  assert.ok(found, id);
  return found;
};
/** The deepest call's price over the tiers the proposal seats. */
const deepest = (p: ReturnType<typeof propose>): number => Math.max(...Object.values(p.price.byTier).map((d) => d.deep));
const seatIds = (spec: ProposedSpec): string[] => Object.values(spec.seats_by_tier).flatMap((row) => row.map((s) => s.engine));

/** What every proposal keeps: it passes the save rules, every row is diverse and of its tier, staff and fees as designed. */
function checkProposal(req: ProposalRequest, p: ReturnType<typeof propose>): void {
  const { spec } = p;
  const checked = validateMode(spec, proposalContext(req));
  assert.ok(checked.ok, JSON.stringify(checked.refusals));
  assert.deepEqual(
    Object.keys(spec.seats_by_tier),
    TIERS.filter((t) => TIER_RANK[t] <= TIER_RANK[req.tier]),
  );
  const usable = req.engines.filter((e) => e.usable && e.family !== 'sim');
  for (const [tier, row] of Object.entries(spec.seats_by_tier) as [Tier, { engine: string; backup?: string }[]][]) {
    assert.equal(row.length, tier === 'experience' ? 1 : 3, tier);
    const makers = new Set(row.map((s) => engine(s.engine).maker));
    assert.equal(makers.size, row.length, `${tier}: one maker a seat`);
    // Backups are spare engines of the row's tier that can run, another maker's when there is one.
    const spares = usable.filter((e) => e.tier === tier && !row.some((s) => s.engine === e.id));
    for (const seat of row) {
      assert.equal(engine(seat.engine).tier, tier, seat.engine);
      assert.ok(
        usable.some((e) => e.id === seat.engine),
        `${seat.engine} can run`,
      );
      if (spares.length === 0) {
        assert.equal(seat.backup, undefined);
        continue;
      }
      assert.ok(
        spares.some((e) => e.id === seat.backup),
        `${seat.engine} backs up to a spare, not ${seat.backup}`,
      );
      if (spares.some((e) => !makers.has(e.maker)))
        assert.ok(!makers.has(engine(String(seat.backup)).maker), `${seat.backup} is another maker than the row's`);
    }
  }
  // Staff: plus, from the makers holding the fewest panel seats, judge and synthesis of different makers.
  const panel = Object.entries(spec.seats_by_tier)
    .filter(([t]) => t !== 'experience')
    .flatMap(([, row]) => row.map((s) => engine(s.engine).maker));
  const seatsOf = (maker: string): number => panel.filter((m) => m === maker).length;
  const { judge, synthesis } = spec.staff;
  assert.equal(judge.tier, 'plus');
  assert.equal(synthesis.tier, 'plus');
  const fewest = Math.min(...usable.filter((e) => e.tier === 'plus').map((e) => seatsOf(e.maker)));
  assert.equal(seatsOf(engine(judge.engine).maker), fewest, 'the judge comes from a maker with the fewest seats');
  assert.notEqual(engine(judge.engine).maker, engine(synthesis.engine).maker);
  assert.equal(judge.backup, synthesis.engine);
  assert.equal(synthesis.backup, judge.engine);
  // Fees at the floor; a ceiling that lets a typical deep call through.
  assert.deepEqual(spec.fees, {
    surcharge_by_depth_usd: { light: FLOOR.surchargeUsd, medium: FLOOR.surchargeUsd, deep: FLOOR.surchargeUsd },
    express_surcharge_usd: FLOOR.surchargeUsd,
    per_mtok_usd: FLOOR.perMtokUsd,
  });
  assert.ok(spec.ceiling_usd !== undefined && spec.ceiling_usd * 1_000_000 >= deepest(p), `ceiling ${spec.ceiling_usd}`);
  // Priced per tier it seats, dearer with depth.
  assert.deepEqual(Object.keys(p.price.byTier), Object.keys(spec.seats_by_tier));
  for (const d of Object.values(p.price.byTier)) assert.ok(d.light > 0 && d.light <= d.medium && d.medium <= d.deep, JSON.stringify(d));
  assert.equal(p.price.tier, req.tier);
  assert.match(spec.ticker, /^[A-Z]{4}$/);
  assert.ok(p.rationale.length >= 5 && p.rationale.every((line) => line.length > 0));
}

interface Case {
  title: string;
  req: RequestOver;
  expect?: (spec: ProposedSpec, p: ReturnType<typeof propose>) => void;
}

const CASES: Case[] = [
  {
    title: 'a general description gets the general panel',
    req: {},
    expect: (s) => {
      assert.equal(s.rounds, 2);
      assert.equal(s.critique, 'when_split');
      assert.equal(s.express, 'auto');
      assert.equal(s.name, 'General Helper Team Panel');
      assert.equal(s.ticker, 'GHTP');
    },
  },
  {
    title: 'hard maths and code: three rounds, critique always, never express',
    req: { description: 'Careful answers to hard maths and code questions' },
    expect: (s, p) => {
      assert.deepEqual([s.rounds, s.critique, s.express, s.skip_synthesis_when_converged], [3, 'always', 'never', false]);
      assert.match(p.rationale[0], /hard reasoning \("hard"\)/);
    },
  },
  {
    title: 'quick and cheap: one round, no critique',
    req: { description: 'Quick cheap answers for everyday chat' },
    expect: (s) => assert.deepEqual([s.rounds, s.critique, s.seat_max_output_tokens], [1, 'never', 512]),
  },
  {
    title: 'hard reasoning outranks quick; the rationale names only what decided',
    req: { description: 'Quick maths' },
    expect: (s, p) => {
      assert.equal(s.rounds, 3);
      assert.ok(!p.rationale.some((l) => l.includes('quick or cheap')), p.rationale.join('\n'));
    },
  },
  {
    title: 'creative writing: no grounding',
    req: { description: 'Short stories and poems for children' },
    expect: (s) => assert.equal(s.grounding, 'off'),
  },
  {
    title: 'a maker sits once a row, even when it makes the two dearest engines',
    req: { extra: [SECOND_ANTHROPIC_PRO] },
    expect: (s) => {
      const pro = s.seats_by_tier.pro?.map((seat) => seat.engine);
      assert.ok(pro?.includes('anthropic/claude-opus-4-1') && !pro.includes('anthropic/claude-second'), String(pro));
    },
  },
  {
    title: 'a plus caller gets experience and plus rows',
    req: { tier: 'plus' },
    expect: (s) => assert.equal(s.seats_by_tier.pro, undefined),
  },
  {
    title: 'an experience caller gets the express seat alone',
    req: { tier: 'experience', description: 'Hard maths' },
    expect: (s) => assert.deepEqual([s.express, s.rounds, s.critique], ['always', 1, 'never']),
  },
  {
    title: 'Form A validates too',
    req: { form: 'A' as Form, description: 'Legal questions' },
  },
  {
    title: 'only the families that can run are seated',
    req: { usable: families('openai', 'anthropic', 'google') },
    expect: (s) => {
      assert.ok(seatIds(s).every((id) => !id.startsWith('bedrock/')));
      assert.deepEqual(s.seats_by_tier.pro?.map((seat) => seat.engine).sort(), [
        'anthropic/claude-opus-4-1',
        'google/gemini-2.5-pro',
        'openai/gpt-5',
      ]);
      // Three makers, three engines a panel tier: no spare, so no panel seat has a backup.
      assert.ok([...(s.seats_by_tier.plus ?? []), ...(s.seats_by_tier.pro ?? [])].every((seat) => seat.backup === undefined));
    },
  },
  {
    title: 'a description with markup and control characters is cleaned; a long one is clipped',
    req: { description: `<script>alert(1)</script>\u0007 Contested policy debates. ${'word '.repeat(200)}` },
    expect: (s) => {
      assert.ok(s.description && !/[<>]/.test(s.description) && !s.description.includes('\u0007') && s.description.length <= 500);
      assert.ok(s.use_when.length <= 200);
      assert.equal(s.critique, 'always');
    },
  },
  {
    title: 'reserved words and punctuation-only descriptions still give a valid name',
    req: { description: 'Quorum!!! ???' },
    expect: (s) => assert.equal(s.name, 'Proposed Panel'),
  },
];

describe('advisor_propose_mode designer (pure)', () => {
  for (const c of CASES) {
    it(c.title, () => {
      const req = request(c.req);
      const p = propose(req);
      checkProposal(req, p);
      c.expect?.(p.spec, p);
    });
  }

  it('is deterministic', () => {
    assert.deepEqual(designMode(request({ description: 'Hard maths' })), designMode(request({ description: 'Hard maths' })));
  });

  describe('budget', () => {
    const description = 'Hard maths proofs';
    let dearest: ReturnType<typeof propose>;
    let cheapest: ReturnType<typeof propose>;
    before(() => {
      dearest = propose(request({ description }));
      cheapest = propose(request({ description, budgetMicros: 1 }));
    });

    it('without a budget takes the dearest engines; under an impossible one the cheapest design, said to be over', () => {
      assert.equal(dearest.price.withinBudget, null);
      assert.equal(cheapest.price.withinBudget, false);
      assert.ok(deepest(cheapest) < deepest(dearest));
      assert.match(cheapest.rationale.join(' '), /No design fits a budget of \$0\.000001/);
      assert.ok(seatIds(dearest.spec).includes('anthropic/claude-opus-4-1'));
      assert.ok(!seatIds(cheapest.spec).includes('anthropic/claude-opus-4-1'));
    });

    it('a budget between the two picks cheaper engines that fit, and holds the ceiling to it', () => {
      const budget = Math.round((deepest(cheapest) + deepest(dearest)) / 2);
      const req = request({ description, budgetMicros: budget });
      const p = propose(req);
      checkProposal(req, p);
      assert.equal(p.price.withinBudget, true);
      assert.ok(deepest(p) <= budget && deepest(p) < deepest(dearest), `${deepest(p)} within ${budget}`);
      assert.ok((p.spec.ceiling_usd ?? Infinity) * 1_000_000 <= budget);
      assert.notDeepEqual(seatIds(p.spec), seatIds(dearest.spec));
    });

    it('a budget the dearest design fits changes nothing but the ceiling', () => {
      const p = propose(request({ description, budgetMicros: deepest(dearest) * 10 }));
      assert.equal(p.price.withinBudget, true);
      assert.deepEqual(seatIds(p.spec), seatIds(dearest.spec));
      assert.deepEqual(p.spec.staff, dearest.spec.staff);
    });
  });

  describe('too few engines', () => {
    const TOO_FEW: { title: string; req: Partial<ProposalRequest> & { usable: Usable }; tiers: Tier[]; reason: RegExp }[] = [
      {
        title: 'two makers cannot fill a panel row',
        req: { usable: families('openai', 'google') },
        tiers: ['plus', 'pro'],
        reason: /2 of the 4 plus engines can run here \(makers: google, openai\); the plus row needs 3 engines from different makers/,
      },
      {
        title: 'a plus caller is short of plus only',
        req: { tier: 'plus', usable: families('openai', 'google') },
        tiers: ['plus'],
        reason: /plus/,
      },
      {
        title: 'nothing real can run (simulated engines are never proposed)',
        req: { usable: families() },
        tiers: ['experience', 'plus', 'pro'],
        reason: /0 of the 4 experience engines/,
      },
      {
        title: 'an express mode still needs plus staff',
        req: { tier: 'experience', usable: (e) => e.tier === 'experience' },
        tiers: ['plus'],
        reason: /judge and synthesis sit at plus/,
      },
    ];
    for (const c of TOO_FEW) {
      it(c.title, () => {
        const result = designMode(request(c.req));
        assert.ok(!result.ok && result.reason === 'too_few_engines', JSON.stringify(result));
        assert.deepEqual(
          result.shortfalls.map((s) => s.tier),
          c.tiers,
        );
        assert.match(result.shortfalls[0].reason, c.reason);
      });
    }

    it('an express mode from two makers is still proposed', () => {
      const req = request({ tier: 'experience', usable: families('openai', 'google') });
      checkProposal(req, propose(req));
    });
  });
});
