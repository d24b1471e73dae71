import type { AuditScope, Invariant, Violation } from '../../domain/audit';
import { RECOUNTED_CALL_STATS } from './mode-call-stats';
import type { DbOrTrx } from './shared';

/**
 * The auditor's reads (domain/audit.ts, issue 26 item 18): one query per part of an invariant, each returning the
 * rows that break it with the ids to look at and a `detail` sentence built in SQL. Read-only; runs on the pool or
 * inside a caller's transaction (a test audits state it then rolls back). The checks that need Temporal take their
 * candidates from `chargedRuns` and `openHolds` (operations/audit.ts).
 */

/** When run summaries began to carry `coverage` (issue 26 item 8): a certified verdict finished before has none. */
export const COVERAGE_RECORDED_SINCE = '2026-11-25T00:00:00Z';

/**
 * Since when every attempt a seat was billed for is on its receipt row (issue 27 item 7): before, a cut answer's
 * retry showed only its last attempt, so a receipt's rows may fall short of its call even with no staff engine.
 */
export const SEAT_ATTEMPTS_RECORDED_SINCE = '2026-11-25T00:00:00Z';

/** Since when an ended certification refunds in full without a verdict (issue 38 item 7): before, the unjudged share. */
export const FULL_REFUND_SINCE = '2026-11-27T00:00:00Z';

/** The id columns a check's rows may carry, in the order a report lists them. */
const ID_COLUMNS = [
  'org_id',
  'request_id',
  'run_id',
  'workflow_id',
  'entry_id',
  'idempotency_key',
  'quote_id',
  'mode_id',
  'person_id',
  'key_id',
] as const;

interface Check {
  invariant: Invariant;
  /** A SELECT of the breaking rows: some of ID_COLUMNS and `detail`; `$scope(col)` restricts it to the audited organisations. */
  sql: string;
}

const MONEY_KINDS = "('reservation','release','charge','cap_credit','test_run_charge','run_refund')";
/** A run in one of these states is still going: its workflow must be running. */
const LIVE_RUN_STATES: readonly string[] = ['launching', 'queued', 'running', 'judging'];

const CHECKS: readonly Check[] = [
  {
    invariant: 'balance_equals_ledger',
    sql: `
      with sums as (
        select org_id, sum(amount_micros) as amount, sum(reserved_delta_micros) as reserved from ledger_entries group by org_id
      )
      select coalesce(b.org_id, s.org_id) as org_id,
             format('balance %s µ$ and reserved %s µ$, but its ledger entries sum to %s µ$ and %s µ$ reserved',
                    coalesce(b.balance_micros::text, '(no balance row)'), coalesce(b.reserved_micros::text, '-'),
                    coalesce(s.amount, 0), coalesce(s.reserved, 0)) as detail
        from balances b full join sums s on s.org_id = b.org_id
       where $scope(coalesce(b.org_id, s.org_id))
         and (b.balance_micros is distinct from coalesce(s.amount, 0) or b.reserved_micros is distinct from coalesce(s.reserved, 0))`,
  },
  {
    invariant: 'hold_matches_ledger',
    sql: `
      with led as (
        select org_id, request_id, sum(reserved_delta_micros) as held from ledger_entries
         where kind in ('reservation','release') and request_id is not null group by org_id, request_id
      )
      select coalesce(r.org_id, l.org_id) as org_id, coalesce(r.request_id, l.request_id) as request_id,
             format('reservation %s of %s µ$, but the ledger holds %s µ$ for it',
                    coalesce(r.state, '(no row)'), coalesce(r.amount_micros::text, '-'), coalesce(l.held, 0)) as detail
        from reservations r full join led l on l.org_id = r.org_id and l.request_id = r.request_id
       where $scope(coalesce(r.org_id, l.org_id))
         and coalesce(case when r.state = 'held' then r.amount_micros else 0 end, 0) <> coalesce(l.held, 0)`,
  },
  {
    invariant: 'hold_outlives_request',
    sql: `
      select h.org_id, h.request_id, q.workflow_id,
             format('%s of %s µ$ still held, but its request is %s', h.what, h.amount,
                    case when q.id is null then 'missing'
                         when q.superseded_at is not null then q.state || ' and superseded by a later run'
                         else q.state end) as detail
        from (select org_id, request_id, amount_micros as amount, 'a hold on the balance' as what from reservations where state = 'held'
              union all
              select org_id, request_id, held_micros, 'a hold on plan ' || plan_id || ' of ' || person_id from plan_usage where state = 'held') h
        left join requests q on q.id = h.request_id
       where $scope(h.org_id)
         and (q.id is null or q.state <> 'running' or q.superseded_at is not null)`,
  },
  {
    invariant: 'receipt_components',
    sql: `
      select x.org_id, x.request_id,
             format('%s receipt: engines %s + platform fee %s + mode fee %s − cap credit %s, billed %s µ$ (ceiling %s, payer %s; outcome says billed %s, cap credit %s)',
                    x.status, x.gateway_micros, x.platform_fee_micros, x.mode_fee_micros, x.cap_credit_micros, x.billed_micros,
                    coalesce(c.ceiling::text, 'none'), coalesce(x.outcome->>'payer', 'unknown'),
                    coalesce(x.outcome#>>'{money,billedMicros}', 'unknown'), coalesce(x.outcome#>>'{money,capCreditMicros}', 'unknown')) as detail
        from receipts x
        cross join lateral (select (x.outcome#>>'{money,ceilingMicros}')::bigint as ceiling,
                                   x.gateway_micros + x.platform_fee_micros + x.mode_fee_micros as gross) c
       where $scope(x.org_id)
         and not (
           least(x.gateway_micros, x.platform_fee_micros, x.mode_fee_micros, x.cap_credit_micros, x.billed_micros) >= 0
           and (
             -- Form B (and any call under its ceiling): the parts less the credit, the credit only when capped at the ceiling.
             (x.billed_micros = c.gross - x.cap_credit_micros
               and (x.cap_credit_micros = 0 or (x.status in ('capped', 'cancelled') and x.billed_micros = coalesce(c.ceiling, x.billed_micros))))
             -- Form A capped: the charge held at the disclosed ceiling, below the parts' sum (a cancelled call past it too).
             or (x.cap_credit_micros = 0 and x.status in ('capped', 'cancelled') and x.billed_micros < c.gross and x.billed_micros = c.ceiling)
           )
           and (x.outcome->>'payer' is distinct from 'plan' or x.platform_fee_micros = 0)
           and (x.outcome#>>'{money,billedMicros}')::bigint is not distinct from x.billed_micros
           and (x.outcome#>>'{money,capCreditMicros}')::bigint is not distinct from x.cap_credit_micros
         )`,
  },
  {
    invariant: 'receipt_seats_unaccounted',
    sql: `
      with rows as (
        select request_id, sum(tokens_in) as tokens_in, sum(tokens_out) as tokens_out,
               coalesce(sum(real_cost_micros) filter (where source = 'service'), 0) as service_cost
          from receipt_seats group by request_id
      )
      select x.org_id, x.request_id,
             format('seat rows and classifier %s tokens in, %s out, %s µ$ on the service''s keys; the call %s in, %s out, engines %s µ$ (%s)',
                    s.tokens_in, s.tokens_out, s.service_cost, x.prompt_tokens, x.completion_tokens, x.gateway_micros,
                    case when s.staff then 'with a judge or synthesis, which take the rest'
                         else 'no judge or synthesis ran, so the rows and the classifier are all of it' end) as detail
        from receipts x
        left join rows r on r.request_id = x.request_id
        -- The classifier model's call (issue 38) and a vote's ballot call (issue 52) are on the receipt beside the rows,
        -- on the service's keys.
        cross join lateral (select coalesce((x.outcome#>>'{staff,classifier,tokensIn}')::bigint, 0)
                                     + coalesce((x.outcome#>>'{aggregation,ballotCall,tokensIn}')::bigint, 0) as tokens_in,
                                   coalesce((x.outcome#>>'{staff,classifier,tokensOut}')::bigint, 0)
                                     + coalesce((x.outcome#>>'{aggregation,ballotCall,tokensOut}')::bigint, 0) as tokens_out,
                                   coalesce((x.outcome#>>'{staff,classifier,realCostMicros}')::bigint, 0)
                                     + coalesce((x.outcome#>>'{aggregation,ballotCall,realCostMicros}')::bigint, 0) as cost) k
        cross join lateral (select coalesce(r.tokens_in, 0) + k.tokens_in as tokens_in, coalesce(r.tokens_out, 0) + k.tokens_out as tokens_out,
                                   coalesce(r.service_cost, 0) + k.cost as service_cost,
                                   coalesce(x.outcome#>'{staff,judge}', 'null'::jsonb) <> 'null'::jsonb
                                   or coalesce(x.outcome#>'{staff,synthesis}', 'null'::jsonb) <> 'null'::jsonb as staff) s
       where $scope(x.org_id)
         and (s.tokens_in > x.prompt_tokens or s.tokens_out > x.completion_tokens
              -- A test key's call bills no engines, whatever its rows cost at their source.
              or (x.gateway_micros > 0 and s.service_cost > x.gateway_micros)
              or (not s.staff and x.created_at >= :seatAttemptsSince::timestamptz
                  and (s.tokens_in <> x.prompt_tokens or s.tokens_out <> x.completion_tokens
                       or (x.gateway_micros > 0 and s.service_cost <> x.gateway_micros))))`,
  },
  {
    invariant: 'charge_without_basis',
    sql: `
      select e.org_id, e.request_id, e.id::text as entry_id,
             format('%s of %s µ$ %s', e.kind, e.amount_micros,
                    case when e.request_id is null then 'names no request or run'
                         when e.kind in ('charge','cap_credit') then 'has no receipt'
                         else 'has no run' end) as detail
        from ledger_entries e
       where $scope(e.org_id)
         and e.kind in ${MONEY_KINDS}
         and (e.request_id is null
              or (e.kind in ('charge','cap_credit')
                  and not exists (select 1 from receipts x where x.request_id = e.request_id and x.org_id = e.org_id))
              or (e.kind in ('test_run_charge','run_refund')
                  and not exists (select 1 from runs r where r.id::text = e.request_id and r.org_id = e.org_id)))`,
  },
  {
    invariant: 'charge_differs_from_bill',
    sql: `
      with calls as (
        select org_id, request_id, -sum(amount_micros) as net, count(*) filter (where kind = 'charge') as charges
          from ledger_entries where kind in ('charge','cap_credit') and request_id is not null group by org_id, request_id
      )
      select x.org_id, x.request_id,
             case when x.outcome->>'payer' = 'plan'
                  then format('a plan''s call, yet the balance was charged %s µ$ for it', coalesce(c.net, 0))
                  else format('receipt billed %s µ$, the ledger charged %s µ$ net (%s charge entries)', x.billed_micros, coalesce(c.net, 0), coalesce(c.charges, 0))
             end as detail
        from receipts x left join calls c on c.request_id = x.request_id and c.org_id = x.org_id
       where $scope(x.org_id)
         and case when x.outcome->>'payer' = 'plan' then c.request_id is not null
                  else (c.request_id is not null or x.billed_micros <> 0) and coalesce(c.net, 0) <> x.billed_micros end`,
  },
  {
    invariant: 'charge_differs_from_bill',
    sql: `
      select r.org_id, r.id::text as run_id, r.workflow_id,
             case when r.plan_person_id is not null
                  then format('a plan''s run billed %s µ$ and refunded %s µ$; the ledger charged the balance %s µ$ and refunded %s µ$',
                              r.billed_micros, r.refunded_micros, coalesce(l.charged, 0), coalesce(l.refunded, 0))
                  else format('run billed %s µ$ and refunded %s µ$; the ledger charged %s µ$ and refunded %s µ$',
                              r.billed_micros, r.refunded_micros, coalesce(l.charged, 0), coalesce(l.refunded, 0))
             end as detail
        from runs r
        left join (select org_id, request_id,
                          -sum(amount_micros) filter (where kind = 'test_run_charge') as charged,
                          sum(amount_micros) filter (where kind = 'run_refund') as refunded
                     from ledger_entries where kind in ('test_run_charge','run_refund') and request_id is not null
                    group by org_id, request_id) l on l.request_id = r.id::text and l.org_id = r.org_id
       where $scope(r.org_id)
         and (r.refunded_micros > r.billed_micros
              -- A plan's run is charged to the plan (plan_month_used reads the row), never to the balance.
              or case when r.plan_person_id is not null then l.request_id is not null
                      else coalesce(l.charged, 0) <> r.billed_micros or coalesce(l.refunded, 0) <> r.refunded_micros end)`,
  },
  {
    invariant: 'key_billed_twice',
    sql: `
      select q.org_id, q.idempotency_key, string_agg(q.id, ', ' order by q.created_at) as request_id,
             format('%s answered runs under one key (states %s; billed %s µ$)', count(*),
                    string_agg(q.state, ', ' order by q.created_at), string_agg(x.billed_micros::text, ' + ' order by q.created_at)) as detail
        from requests q join receipts x on x.request_id = q.id
       where $scope(q.org_id) and q.state not in ('capped', 'cancelled')
       group by q.org_id, q.idempotency_key
      having count(*) > 1`,
  },
  {
    invariant: 'key_billed_twice',
    sql: `
      select q.org_id, q.idempotency_key, q.id as request_id, 'a succeeded request was superseded by a later run under its key' as detail
        from requests q
       where $scope(q.org_id) and q.state = 'succeeded' and q.superseded_at is not null`,
  },
  {
    invariant: 'key_billed_twice',
    sql: `
      select r.org_id, substring(r.idempotency_key from '^quote-(.+)-[0-9]+$') as quote_id, string_agg(r.id::text, ', ' order by r.created_at) as run_id,
             format('one advisor quote launched %s runs that kept their charge', count(*)) as detail
        from runs r
       where $scope(r.org_id) and r.idempotency_key like 'quote-%' and r.billed_micros > r.refunded_micros
       group by r.org_id, r.kind, substring(r.idempotency_key from '^quote-(.+)-[0-9]+$')
      having count(*) > 1`,
  },
  {
    invariant: 'certified_without_coverage',
    sql: `
      select r.org_id, r.id::text as run_id, r.mode_id,
             format('%s %s certification of version %s says certified, %s', r.key_mode, r.state, r.mode_version,
                    case when r.summary->'coverage' is not null
                         then 'but its coverage is not met: ' || (r.summary->'coverage')::text
                         else 'but its summary records no coverage' end) as detail
        from runs r
       where $scope(r.org_id)
         and r.kind = 'certification' and r.summary->>'verdict' = 'certified'
         and coalesce(r.summary#>>'{coverage,met}', '') <> 'true'
         and (r.summary->'coverage' is not null or coalesce(r.finished_at, now()) >= :coverageSince::timestamptz)`,
  },
  {
    invariant: 'listed_version_uncertified',
    sql: `
      select m.org_id, m.id as mode_id,
             format('listed at version %s, certified by live runs at versions %s only', m.listing_version,
                    string_agg(distinct c.mode_version::text, ', ')) as detail
        from modes m
        join runs c on c.mode_id = m.id and c.kind = 'certification' and c.state = 'completed' and c.key_mode = 'live'
                   and c.summary->>'verdict' = 'certified'
       where $scope(m.org_id) and m.listing_state = 'listed'
       group by m.org_id, m.id, m.listing_version
      having bool_or(c.mode_version < m.listing_version) and not bool_or(c.mode_version = m.listing_version)`,
  },
  {
    // Settled: no commitment open (balances.trial_due_micros is null again). A hold or run open at the expiry is one
    // whose reservation or run row is older than it; its later charge, cap credit or refund counts as the trial's.
    invariant: 'trial_deduction_mismatch',
    sql: `
      with t as (
        select o.id as org_id, o.trial_credit_micros as credit, o.trial_started_at as started, o.trial_expired_at as expired
          from organisations o join balances b on b.org_id = o.id
         where $scope(o.id) and o.trial_expired_at is not null and b.trial_due_micros is null
      ),
      spent as (
        select t.org_id, -sum(e.amount_micros) as spent
          from t join ledger_entries e on e.org_id = t.org_id
         where e.kind in ('charge','test_run_charge','cap_credit','run_refund') and e.created_at >= t.started
           and (e.created_at <= t.expired
                or exists (select 1 from reservations r where r.org_id = e.org_id and r.request_id = e.request_id and r.created_at <= t.expired)
                or exists (select 1 from runs u where u.org_id = e.org_id and u.id::text = e.request_id and u.created_at <= t.expired))
         group by t.org_id
      ),
      deducted as (
        select e.org_id, -sum(e.amount_micros) as deducted from t join ledger_entries e on e.org_id = t.org_id
         where e.kind = 'trial_expiry' group by e.org_id
      )
      select t.org_id,
             format('a trial of %s µ$ with %s µ$ spent from it leaves %s µ$ unused, but %s µ$ was deducted',
                    t.credit, coalesce(s.spent, 0), greatest(t.credit - coalesce(s.spent, 0), 0), coalesce(d.deducted, 0)) as detail
        from t left join spent s on s.org_id = t.org_id left join deducted d on d.org_id = t.org_id
       where coalesce(d.deducted, 0) <> greatest(t.credit - coalesce(s.spent, 0), 0)`,
  },
  {
    invariant: 'run_billed_off_quote',
    sql: `
      select r.org_id, r.id::text as run_id,
             format('billed %s µ$, but the prices of its %s questions sum to %s µ$', r.billed_micros, p.n, p.total) as detail
        from runs r
        cross join lateral (select count(*) as n, coalesce(sum(e.value::bigint), 0) as total
                              from jsonb_each_text(r.spec->'questionPrices') e) p
       where $scope(r.org_id) and r.kind = 'test' and jsonb_typeof(r.spec->'questionPrices') = 'object'
         and r.billed_micros <> p.total`,
  },
  {
    invariant: 'certification_kept_without_verdict',
    sql: `
      select r.org_id, r.id::text as run_id,
             format('%s certification %s, billed %s µ$ and refunded %s µ$', r.state,
                    case when r.summary->>'verdict' is null then 'without a verdict' else 'with verdict ' || (r.summary->>'verdict') end,
                    r.billed_micros, r.refunded_micros) as detail
        from runs r
       where $scope(r.org_id) and r.kind = 'certification' and r.state in ('completed', 'incomplete', 'failed', 'cancelled')
         and coalesce(r.finished_at, now()) >= :fullRefundSince::timestamptz
         and r.billed_micros - r.refunded_micros <>
             case when r.state = 'completed' and r.summary->>'verdict' is not null then r.billed_micros else 0 end`,
  },
  {
    invariant: 'plan_usage_mismatch',
    sql: `
      select u.org_id, u.request_id, u.person_id,
             format('plan %s charged %s µ$ in %s, %s', u.plan_id, u.charged_micros, to_char(u.period, 'YYYY-MM'),
                    case when x.request_id is null then 'but the call has no receipt'
                         when x.outcome->>'payer' is distinct from 'plan' then 'but its receipt''s payer is ' || coalesce(x.outcome->>'payer', 'unknown')
                         when x.org_id <> u.org_id then 'but its receipt is of organisation ' || x.org_id
                         else 'but its receipt billed ' || x.billed_micros || ' µ$' end) as detail
        from plan_usage u left join receipts x on x.request_id = u.request_id
       where $scope(u.org_id) and u.state = 'settled'
         and (x.request_id is null or x.outcome->>'payer' is distinct from 'plan' or x.org_id <> u.org_id or x.billed_micros <> u.charged_micros)
      union all
      select x.org_id, x.request_id, u.person_id,
             format('a plan''s call billed %s µ$, but its plan usage is %s', x.billed_micros, coalesce(u.state, 'missing'))
        from receipts x left join plan_usage u on u.request_id = x.request_id
       where $scope(x.org_id) and x.outcome->>'payer' = 'plan' and (u.request_id is null or u.state <> 'settled')`,
  },
  {
    // A system mode (no owner) is audited with every organisation: its count holds the calls of all of them. A first
    // wave's counts (issue 52) are in the line when either side has any.
    invariant: 'mode_stats_mismatch',
    sql: `
      with recount as (${RECOUNTED_CALL_STATS})
      select m.org_id, coalesce(k.mode_id, r.mode_id) as mode_id,
             format('%s (configuration %s) at %s: counted %s calls, %s tokens in, %s out, %s µ$ mode fee; its receipts hold %s, %s, %s, %s µ$',
                    coalesce(k.mode_id, r.mode_id), coalesce(k.config_hash, r.config_hash), coalesce(k.tier, r.tier),
                    coalesce(k.n, 0), coalesce(k.input_tokens, 0), coalesce(k.output_tokens, 0), coalesce(k.mode_fee_micros, 0),
                    coalesce(r.n, 0), coalesce(r.input_tokens, 0), coalesce(r.output_tokens, 0), coalesce(r.mode_fee_micros, 0))
             || case when greatest(k.wave_calls, k.wave_all_asked, r.wave_calls, r.wave_all_asked) > 0
                     then format('; of them with their seats asked recorded, counted %s, %s asking every seat; its receipts hold %s, %s',
                                 coalesce(k.wave_calls, 0), coalesce(k.wave_all_asked, 0), coalesce(r.wave_calls, 0), coalesce(r.wave_all_asked, 0))
                     else '' end as detail
        from mode_call_stats k
        full join recount r on r.mode_id = k.mode_id and r.config_hash = k.config_hash and r.tier = k.tier
        left join modes m on m.id = coalesce(k.mode_id, r.mode_id)
       where $scope(m.org_id)
         and (k.n, k.input_tokens, k.output_tokens, k.mode_fee_micros, k.wave_calls, k.wave_all_asked)
             is distinct from (r.n, r.input_tokens, r.output_tokens, r.mode_fee_micros, r.wave_calls, r.wave_all_asked)`,
  },
  {
    invariant: 'key_spend_mismatch',
    sql: `
      with recount as (
        select r.org_id, r.api_key_id, date_trunc('month', r.created_at at time zone 'UTC')::date as month,
               -sum(e.amount_micros) as spent_micros, sum(e.reserved_delta_micros) as held_micros
          from ledger_entries e join requests r on r.id = e.request_id and r.org_id = e.org_id
         where r.api_key_id is not null and $scope(r.org_id)
         group by 1, 2, 3)
      select coalesce(k.org_id, c.org_id) as org_id, coalesce(k.api_key_id, c.api_key_id) as key_id,
             format('%s: counted %s µ$ spent, %s µ$ held; its calls'' ledger entries hold %s, %s',
                    to_char(coalesce(k.month, c.month), 'YYYY-MM'), coalesce(k.spent_micros, 0), coalesce(k.held_micros, 0),
                    coalesce(c.spent_micros, 0), coalesce(c.held_micros, 0)) as detail
        from (select * from key_month_spend where $scope(org_id)) k
        full join recount c on c.org_id = k.org_id and c.api_key_id = k.api_key_id and c.month = k.month
       where (k.spent_micros, k.held_micros) is distinct from (c.spent_micros, c.held_micros)`,
  },
  {
    invariant: 'streamed_answer_differs',
    sql: `
      select q.org_id, q.id as request_id,
             format('%s piece(s) of its answer were streamed (%s characters) that do not begin the answer its receipt records (%s characters)',
                    c.n, length(c.streamed), length(x.outcome->>'answer')) as detail
        from (select request_id, count(*) filter (where call_result is null) as n, string_agg(text, '' order by step, part) as streamed
                from answer_chunks group by request_id) c
        join receipts x on x.request_id = c.request_id
        join requests q on q.id = c.request_id
       where $scope(q.org_id) and x.transcript_deleted_at is null and q.state in ('succeeded', 'capped')
         and left(x.outcome->>'answer', length(c.streamed)) <> c.streamed`,
  },
];

/** `$scope(col)` → a condition on that column: every organisation, or those of `:orgs` (a JSON array). */
function scoped(sql: string): string {
  return sql.replace(
    /\$scope\(((?:[^()]|\([^()]*\))+)\)/g,
    (_, col: string) => `(:orgs::jsonb is null or ${col} in (select jsonb_array_elements_text(:orgs::jsonb)))`,
  );
}

function bindings(scope: AuditScope): Record<string, string | null> {
  return {
    orgs: scope.orgIds ? JSON.stringify(scope.orgIds) : null,
    coverageSince: COVERAGE_RECORDED_SINCE,
    seatAttemptsSince: SEAT_ATTEMPTS_RECORDED_SINCE,
    fullRefundSince: FULL_REFUND_SINCE,
  };
}

type Row = Partial<Record<(typeof ID_COLUMNS)[number], string | null>> & { detail: string };

function toViolation(invariant: Invariant, row: Row): Violation {
  const ids: Record<string, string> = {};
  for (const c of ID_COLUMNS) {
    const v = row[c];
    if (v !== undefined && v !== null) ids[c] = String(v);
  }
  return { invariant, ids, detail: row.detail };
}

/** Every SQL invariant over the audited organisations: the rows that break one, as violations. */
export async function auditDatabase(db: DbOrTrx, scope: AuditScope = {}): Promise<Violation[]> {
  const found: Violation[] = [];
  for (const check of CHECKS) {
    const { rows } = await db.raw<{ rows: Row[] }>(scoped(check.sql), bindings(scope));
    found.push(...rows.map((r) => toViolation(check.invariant, r)));
  }
  return found;
}

/** A run charged and not (wholly) refunded: its workflow must exist (operations/audit.ts asks Temporal). */
export interface ChargedRun {
  orgId: string;
  runId: string;
  workflowId: string;
  state: string;
  /** The run's row still says it is going (its workflow must be running). */
  live: boolean;
  finishedAt: Date | null;
}

export async function chargedRuns(db: DbOrTrx, scope: AuditScope = {}): Promise<ChargedRun[]> {
  const { rows } = await db.raw<{ rows: { org_id: string; id: string; workflow_id: string; state: string; finished_at: Date | null }[] }>(
    scoped(`select org_id, id::text as id, workflow_id, state, finished_at from runs
             where $scope(org_id) and billed_micros > refunded_micros order by created_at`),
    { orgs: bindings(scope).orgs },
  );
  return rows.map((r) => ({
    orgId: r.org_id,
    runId: r.id,
    workflowId: r.workflow_id,
    state: r.state,
    live: LIVE_RUN_STATES.includes(r.state),
    finishedAt: r.finished_at,
  }));
}

/** Money held for a request that is still running (not superseded): its workflow must be running too. */
export interface OpenHold {
  orgId: string;
  requestId: string;
  workflowId: string;
  /** `balance` or `plan`. */
  on: string;
  amountMicros: string;
}

export async function openHolds(db: DbOrTrx, scope: AuditScope = {}): Promise<OpenHold[]> {
  const { rows } = await db.raw<{ rows: { org_id: string; request_id: string; workflow_id: string; held_on: string; amount: string }[] }>(
    scoped(`select h.org_id, h.request_id, q.workflow_id, h.held_on, h.amount::text as amount
              from (select org_id, request_id, amount_micros as amount, 'balance' as held_on from reservations where state = 'held'
                    union all
                    select org_id, request_id, held_micros, 'plan' from plan_usage where state = 'held') h
              join requests q on q.id = h.request_id and q.state = 'running' and q.superseded_at is null
             where $scope(h.org_id)
             order by q.created_at`),
    { orgs: bindings(scope).orgs },
  );
  return rows.map((r) => ({ orgId: r.org_id, requestId: r.request_id, workflowId: r.workflow_id, on: r.held_on, amountMicros: r.amount }));
}
