import { z } from 'zod';
import type { Person } from '../db/repositories/people';
import type { PlanUsage } from '../db/repositories/plans';
import { microsToUsd } from '../domain/money';
import type { Plan } from '../domain/plans';
import { listBillingPlans, planUsageOf, putOnPlan } from '../operations/plans';
import { command, dollars, OPERATOR, required, type Command, type CommandOutput } from './command';

/**
 * Plans of people signed in through connected apps (DESIGN §15): list them, put a person on one, and show a person's
 * plan with this month's use. A person without an assigned plan is on `free`.
 */

function planJson(p: Plan): Record<string, unknown> {
  return {
    id: p.id,
    name: p.name,
    tiers: p.tiers,
    modes: p.modes,
    monthly_allowance_usd: microsToUsd(BigInt(p.monthlyAllowanceMicros)),
    max_in_flight: p.maxInFlight,
  };
}

function planLine(p: Plan): string {
  const modes = p.modes === null ? 'every mode of the organisation' : `modes ${p.modes.join(', ')}`;
  return `${p.id} (${p.name}): tiers ${p.tiers.join(', ')}; ${modes}; ${dollars(BigInt(p.monthlyAllowanceMicros))} a month; ${p.maxInFlight} in flight`;
}

function usageOutput(person: Person, u: PlanUsage): CommandOutput {
  return {
    json: {
      person_id: person.id,
      email: person.email,
      plan: planJson(u.plan),
      period: u.period,
      charged_usd: microsToUsd(u.chargedMicros),
      held_usd: microsToUsd(u.heldMicros),
      remaining_usd: microsToUsd(u.remainingMicros),
      calls: u.calls,
      runs: u.runs,
      runs_charged_usd: microsToUsd(u.runsMicros),
    },
    text: [
      `${person.email} (${person.id}) is on ${planLine(u.plan)}`,
      `  ${u.period.slice(0, 7)} (UTC): ${dollars(u.chargedMicros)} charged over ${u.calls} call(s) and ${u.runs} run(s) (${dollars(u.runsMicros)}), ${dollars(u.heldMicros)} held by calls in flight, ${dollars(u.remainingMicros)} left`,
    ].join('\n'),
  };
}

/** Positional arguments arrive as `files` (the registry's one list of positionals). */
const positionals = <T extends [z.ZodType, ...z.ZodType[]]>(...items: T) =>
  z.object({ files: z.tuple(items, { error: `give exactly ${items.length} argument(s)` }) });

const planList = command({
  name: 'plan list',
  usage: '',
  options: {},
  input: z.object({}),
  async run(_input, { resources }) {
    const plans = await listBillingPlans(resources, OPERATOR);
    return { json: { plans: plans.map(planJson) }, text: plans.map(planLine).join('\n') };
  },
});

const planAssign = command({
  name: 'plan assign',
  usage: 'EMAIL PLAN',
  options: {},
  positionals: true,
  input: positionals(required, required),
  async run({ files: [email, planId] }, { resources }) {
    const { person, usage } = await putOnPlan(resources, OPERATOR, { email, planId });
    return usageOutput(person, usage);
  },
});

const planShow = command({
  name: 'plan show',
  usage: 'EMAIL',
  options: {},
  positionals: true,
  input: positionals(required),
  async run({ files: [email] }, { resources }) {
    const { person, usage } = await planUsageOf(resources, OPERATOR, email);
    return usageOutput(person, usage);
  },
});

export const planCommands: readonly Command[] = [planList, planAssign, planShow];
