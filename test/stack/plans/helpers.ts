import { randomUUID } from 'node:crypto';
import { authenticateGrant } from '../../../operations/callers';
import { DEFAULT_RUN_SETTINGS } from '../../../operations/run-settings';
import type { OperationDeps } from '../../../operations/deps';
import type { KeyPrincipal } from '../../../operations/principal';
import { createPerson, type Person } from '../../../db/repositories/people';
import { assignPlan } from '../../../db/repositories/plans';
import { SCOPES } from '../../../domain/api-keys';
import type { Form } from '../../../domain/form';
import type { Tier } from '../../../domain/modes';
import type { Plan } from '../../../domain/plans';
import { createLogger } from '../../../infra/log';
import { newOrg, type TestOrg } from '../api/helpers';
import { stack } from '../../harness/stack';
import { entrySettingsOf } from '../../harness/settings';

/** The operations' dependencies on the shared test stack, as the API builds them (sim engines stand in offline). */
export function operationDeps(form: Form): OperationDeps {
  const log = createLogger('test-plans', () => undefined);
  return { db: stack().db, client: stack().env.client, form, log, runs: DEFAULT_RUN_SETTINGS, ...entrySettingsOf({}, log) };
}

/** A plan of the test's own (the seeded ones are shared by every test), assigned to nobody yet. */
export async function testPlan(terms: Partial<Omit<Plan, 'id' | 'name'>> = {}): Promise<Plan> {
  const plan: Plan = {
    id: `test-${randomUUID().slice(0, 8)}`,
    name: 'Test',
    tiers: ['experience', 'plus', 'pro'] satisfies Tier[],
    modes: null,
    monthlyAllowanceMicros: 50_000_000,
    maxInFlight: 5,
    ...terms,
  };
  await stack().db('plans').insert({
    id: plan.id,
    name: plan.name,
    tiers: plan.tiers,
    modes: plan.modes,
    monthly_allowance_micros: plan.monthlyAllowanceMicros,
    max_in_flight: plan.maxInFlight,
  });
  return plan;
}

/** A person with a fresh password-less account (sign-in is not under test here). */
export async function newPerson(): Promise<Person> {
  const created = await createPerson(stack().db, {
    email: `plan-${randomUUID().slice(0, 8)}@example.test`,
    name: 'Plan Person',
    passwordHash: 'not-a-hash',
  });
  if (!created) throw new Error('email taken');
  return created.person;
}

export interface AppCaller {
  org: TestOrg;
  person: Person;
  /** What the gate hands the operations for a verified token: `authenticateGrant`, the real code. */
  auth: KeyPrincipal;
}

/** A member of a fresh organisation (with an API key of its own) calling through a connected app on `plan` (default free). */
export async function appCaller(plan?: Plan, creditUsd = 20): Promise<AppCaller> {
  const { db } = stack();
  const org = await newOrg(creditUsd);
  const person = await newPerson();
  await db('memberships').insert({ person_id: person.id, org_id: org.orgId, role: 'member' });
  if (plan) await assignPlan(db, { personId: person.id, planId: plan.id });
  const auth = await appAuth(org.orgId, person.id);
  return { org, person, auth };
}

export function appAuth(orgId: string, personId: string): Promise<KeyPrincipal> {
  const grant = { personId, orgId, clientId: 'client_test', grantId: `grant_${randomUUID()}`, scopes: [...SCOPES] };
  return authenticateGrant(stack(), grant, { edge: 'api' });
}
