import { z } from 'zod';
import type { BillingChange, OrganisationBilling } from '../db/repositories/billing';
import type { Balance } from '../db/repositories/ledger';
import { BILLING } from '../domain/billing';
import { microsToUsd } from '../domain/money';
import { billingOf, changeBilling } from '../operations/billing';
import { command, dollars, OPERATOR, required, usdOrZero, type Command, type CommandOutput } from './command';

/**
 * Organisation billing states (DESIGN §14), set by operators: billing set up or not (`no_billing_configured`), an
 * activation allowance (`verification_required`), a monthly quota (`quota_exceeded`). Each prints the settings it leaves.
 */

const usdOrNull = (micros: bigint | null): number | null => (micros === null ? null : microsToUsd(micros));

function billingOutput({ billing: b, balance }: { billing: OrganisationBilling; balance: Balance }): CommandOutput {
  const activation =
    b.activationAllowanceMicros === null
      ? 'no activation allowance'
      : b.activatedAt
        ? `activated ${b.activatedAt.toISOString()} (allowance ${dollars(b.activationAllowanceMicros)} no longer applies)`
        : `not activated: may spend ${dollars(b.activationAllowanceMicros)} in total first`;
  const quota = b.monthlyQuotaMicros === null ? 'no monthly quota' : `monthly quota ${dollars(b.monthlyQuotaMicros)}`;
  return {
    json: {
      org_id: b.orgId,
      name: b.name,
      status: b.status,
      billing: b.billing,
      activation_allowance_usd: usdOrNull(b.activationAllowanceMicros),
      activated_at: b.activatedAt?.toISOString() ?? null,
      monthly_quota_usd: usdOrNull(b.monthlyQuotaMicros),
      spent_this_month_usd: microsToUsd(b.spentThisMonthMicros),
      spent_total_usd: microsToUsd(b.spentTotalMicros),
      balance_usd: microsToUsd(balance.balanceMicros),
      available_usd: microsToUsd(balance.availableMicros),
    },
    text: [
      `Organisation ${b.orgId} (${b.name}): ${b.status}, billing ${b.billing === 'active' ? 'set up' : 'not configured'}`,
      `  ${activation}; spent ${dollars(b.spentTotalMicros)} in total`,
      `  ${quota}; spent ${dollars(b.spentThisMonthMicros)} this month (UTC)`,
      `  balance ${dollars(balance.balanceMicros)}, available ${dollars(balance.availableMicros)}`,
    ].join('\n'),
  };
}

type Options = Parameters<typeof command>[0]['options'];

/** A change of the settings, then the settings it leaves. */
const billingCommand = (spec: {
  name: string;
  usage: string;
  options: Options;
  input: z.ZodType<{ org: string; change: BillingChange }>;
}): Command =>
  command({
    ...spec,
    usage: `--org ORG_ID ${spec.usage}`,
    options: { org: { type: 'string' }, ...spec.options },
    async run({ org, change }, { resources }) {
      return billingOutput(await changeBilling(resources, OPERATOR, org, change));
    },
  });

/** The change of exactly one of two options (`choices` names them); both or neither is a usage error. */
function exactlyOne(ctx: z.RefinementCtx, choices: string, ...given: (BillingChange | undefined)[]): BillingChange {
  const [only, ...more] = given.filter((c) => c !== undefined);
  if (only && more.length === 0) return only;
  ctx.addIssue({ code: 'custom', message: `give either ${choices}` });
  return z.NEVER;
}

const orgShow = command({
  name: 'org show',
  usage: '--org ORG_ID',
  options: { org: { type: 'string' } },
  input: z.object({ org: required }),
  run: async ({ org }, { resources }) => billingOutput(await billingOf(resources, OPERATOR, org)),
});

const orgBillingState = billingCommand({
  name: 'org billing',
  usage: `--state ${BILLING.join('|')}`,
  options: { state: { type: 'string' } },
  input: z
    .object({ org: required, state: z.enum(BILLING, { error: `must be ${BILLING.join(' or ')}` }) })
    .transform(({ org, state }) => ({ org, change: { billing: state } })),
});

const orgActivation = billingCommand({
  name: 'org activation',
  usage: '(--allowance USD | --activate)',
  options: { allowance: { type: 'string' }, activate: { type: 'boolean' } },
  input: z
    .object({ org: required, allowance: usdOrZero.optional(), activate: z.boolean().optional() })
    .transform(({ org, allowance, activate }, ctx) => ({
      org,
      change: exactlyOne(
        ctx,
        '--allowance USD or --activate',
        allowance === undefined ? undefined : { activationAllowanceMicros: allowance },
        activate ? { activate: true } : undefined,
      ),
    })),
});

const orgQuota = billingCommand({
  name: 'org quota',
  usage: '(--monthly USD | --none)',
  options: { monthly: { type: 'string' }, none: { type: 'boolean' } },
  input: z
    .object({ org: required, monthly: usdOrZero.optional(), none: z.boolean().optional() })
    .transform(({ org, monthly, none }, ctx) => ({
      org,
      change: exactlyOne(
        ctx,
        '--monthly USD or --none',
        monthly === undefined ? undefined : { monthlyQuotaMicros: monthly },
        none ? { monthlyQuotaMicros: null } : undefined,
      ),
    })),
});

export const billingCommands: readonly Command[] = [orgShow, orgBillingState, orgActivation, orgQuota];
