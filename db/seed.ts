import { usdToMicros } from '../domain/money';
import { createOrganisation, organisationExists } from './repositories/organisations';
import type { DbOrTrx } from './repositories/shared';

export const DEMO_ORG_ID = 'org_demo';
/** On top of the $5 trial, so a local demo does not run dry when the trial expires. */
const DEMO_CREDIT_MICROS = usdToMicros('20');

export interface SeededDemo {
  orgId: string;
  /** The owner key, only when this call created the organisation (it is shown once). */
  apiKey?: string;
  /** When this call created the organisation: its trial start, for the caller to start the trial timer with. */
  trialStartedAt?: Date;
}

/**
 * Creates the demo organisation on first start; later starts get `{ orgId }` alone. Postgres only: the caller
 * (the supervisor) starts the trial timer, and the worker's ensureTrialTimers catches up if that never happened.
 */
export async function seedDemoOrganisation(db: DbOrTrx): Promise<SeededDemo> {
  if (await organisationExists(db, DEMO_ORG_ID)) return { orgId: DEMO_ORG_ID };
  let created;
  try {
    created = await createOrganisation(db, { orgId: DEMO_ORG_ID, name: 'Demo', creditMicros: DEMO_CREDIT_MICROS });
  } catch (err) {
    // Another process seeded it between the check and the insert.
    if ((err as { code?: unknown }).code === '23505') return { orgId: DEMO_ORG_ID };
    throw err;
  }
  return { orgId: DEMO_ORG_ID, apiKey: created.apiKey, trialStartedAt: created.trialStartedAt };
}
