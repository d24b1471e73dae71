import type { Knex } from 'knex';
import { localDemoMode, simDemoModes } from '../domain/modes';
import { usdToMicros } from '../domain/money';
import { setListingState, upsertMode } from './repositories/modes';
import { createOrganisation, organisationExists } from './repositories/organisations';
import type { DbOrTrx } from './repositories/shared';

export const DEMO_ORG_ID = 'org_demo';
/** On top of the $5 trial: enough for a local demo to certify both simulated demo modes ($50 each) and keep calling. */
const DEMO_CREDIT_MICROS = usdToMicros('120');

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
export async function seedDemoOrganisation(db: Knex): Promise<SeededDemo> {
  const seeded = await createDemoOrganisation(db);
  await seedDemoModes(db, DEMO_ORG_ID);
  return seeded;
}

/** The simulated strong and weak demo modes, owned by `orgId`, published and listed (so Form B may certify them). */
export async function seedDemoModes(db: Knex, orgId: string, owner = { idPrefix: 'demo', company: 'DEMO' }): Promise<void> {
  for (const mode of simDemoModes(owner)) {
    await upsertMode(db, { ...mode, orgId, published: true });
    await setListingState(db, mode.id, 'listed');
  }
}

/** The local demo's panel on the local model `engineId` (QUORUM_LOCAL_MODEL=on), published in the demo organisation. */
export async function seedLocalDemoMode(db: Knex, engineId: string): Promise<void> {
  await upsertMode(db, { ...localDemoMode({ idPrefix: 'demo', company: 'DEMO' }, engineId), orgId: DEMO_ORG_ID, published: true });
}

async function createDemoOrganisation(db: DbOrTrx): Promise<SeededDemo> {
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
