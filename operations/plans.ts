import { findPersonByEmail, membershipsOf, type Person } from '../db/repositories/people';
import { assignPlan, listPlans, planOf, planUsage, type PlanUsage } from '../db/repositories/plans';
import { QuorumError } from '../domain/errors';
import type { Plan } from '../domain/plans';
import type { Principal } from './principal';
import type { StoreDeps } from './deps';
import { recordActivity } from './activity';

/** Billing plans of people signed in through connected apps (DESIGN §15): listed and assigned by the operator. */

export async function listBillingPlans(deps: StoreDeps, _principal: Principal & { via: 'operator' }): Promise<Plan[]> {
  return listPlans(deps.db);
}

async function personByEmail(deps: StoreDeps, email: string): Promise<Person> {
  const person = await findPersonByEmail(deps.db, email);
  if (!person) throw new QuorumError('not_found', `no person with the email ${email}`);
  return { id: person.id, email: person.email, name: person.name };
}

/** The person's billing plan and this month's use of it. */
export async function planUsageOf(
  deps: StoreDeps,
  _principal: Principal & { via: 'operator' },
  email: string,
): Promise<{ person: Person; usage: PlanUsage }> {
  const person = await personByEmail(deps, email);
  return { person, usage: await planUsage(deps.db, person.id) };
}

/** Puts the person on a billing plan; their plan and this month's use. */
export async function putOnPlan(
  deps: StoreDeps,
  principal: Principal & { via: 'operator' },
  input: { email: string; planId: string },
): Promise<{ person: Person; usage: PlanUsage }> {
  const person = await personByEmail(deps, input.email);
  // A person's plan is theirs across organisations: each of their organisations' logs says it changed.
  await deps.db.transaction(async (trx) => {
    const before = await planOf(trx, person.id);
    const plan = await assignPlan(trx, { personId: person.id, planId: input.planId });
    for (const m of await membershipsOf(trx, person.id))
      await recordActivity(trx, m.orgId, principal, {
        kind: 'plan.changed',
        subject: person.id,
        detail: { person_id: person.id, email: person.email, from: before.id, to: plan.id },
      });
  });
  return { person, usage: await planUsage(deps.db, person.id) };
}

/** The billing plan of a signed-in person (the consent page shows what an app's calls will use). */
export async function ownPlan(deps: StoreDeps, principal: Principal & { via: 'person' }): Promise<Plan> {
  return planOf(deps.db, principal.person.id);
}
