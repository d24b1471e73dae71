import type { Client } from '@temporalio/client';
import { startTrialTimer } from '../cli/trial-timers';
import { usdToMicros } from '../domain/money';
import { createOrganisation, organisationExists } from './repositories/organisations';
import type { DbOrTrx } from './repositories/shared';

export const DEMO_ORG_ID = 'org_demo';
/** On top of the $5 trial, so a local demo does not run dry when the trial expires. */
const DEMO_CREDIT_MICROS = usdToMicros('20');

/**
 * Creates the demo organisation on first start. Returns its owner key only when this call created it
 * (the key is shown once); later starts get `apiKey: undefined`.
 */
export async function seedDemoOrganisation(db: DbOrTrx, client?: Client): Promise<{ orgId: string; apiKey?: string }> {
  if (await organisationExists(db, DEMO_ORG_ID)) return { orgId: DEMO_ORG_ID };
  let created;
  try {
    created = await createOrganisation(db, { orgId: DEMO_ORG_ID, name: 'Demo', creditMicros: DEMO_CREDIT_MICROS });
  } catch (err) {
    // Another process seeded it between the check and the insert.
    if ((err as { code?: unknown }).code === '23505') return { orgId: DEMO_ORG_ID };
    throw err;
  }
  if (client) await startTrialTimer(db, client, { orgId: DEMO_ORG_ID, trialStartedAt: created.trialStartedAt.toISOString() });
  return { orgId: DEMO_ORG_ID, apiKey: created.apiKey };
}
