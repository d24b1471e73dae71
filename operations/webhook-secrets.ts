import { rotateSigningSecret, signingSecretState, type SigningSecretState } from '../db/repositories/webhook-secrets';
import { orgActedOn, requireOwner, type Principal } from './principal';
import type { OperationDeps, StoreDeps } from './deps';
import { recordActivity } from './activity';

/** The secret that signs the organisation's run callbacks: its state is shown, and the owner rotates it. */

export async function signingSecretOf(deps: StoreDeps, principal: Principal): Promise<SigningSecretState | null> {
  return signingSecretState(deps.db, orgActedOn(principal));
}

/** A new signing secret, shown once. */
export async function rotateSecret(deps: Pick<OperationDeps, 'db' | 'box'>, principal: Principal): Promise<string> {
  requireOwner(principal, 'Only the organisation owner rotates the webhook signing secret.');
  const orgId = orgActedOn(principal);
  return deps.db.transaction(async (trx) => {
    const secret = await rotateSigningSecret(trx, deps.box, orgId);
    await recordActivity(trx, orgId, principal, { kind: 'webhook_secret.rotated' });
    return secret;
  });
}
