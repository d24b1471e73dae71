import type { Knex } from 'knex';
import { rotateSigningSecret, signingSecretState, type SigningSecretState } from '../db/repositories/webhook-secrets';
import { orgActedOn, requireOwner, type Principal } from './principal';

/** The secret that signs the organisation's run callbacks: its state is shown, and the owner rotates it. */

export interface WebhookSecretDeps {
  db: Knex;
}

export async function signingSecretOf(deps: WebhookSecretDeps, principal: Principal): Promise<SigningSecretState | null> {
  return signingSecretState(deps.db, orgActedOn(principal));
}

/** A new signing secret, shown once. */
export async function rotateSecret(deps: WebhookSecretDeps, principal: Principal): Promise<string> {
  requireOwner(principal, 'Only the organisation owner rotates the webhook signing secret.');
  return rotateSigningSecret(deps.db, orgActedOn(principal));
}
