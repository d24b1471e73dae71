import { newSigningSecret } from '../../domain/webhook-signature';
import { registerSecret } from '../../infra/redact';
import type { SecretBox } from '../../infra/secret-box';
import { unknownOrgAsNotFound, type DbOrTrx } from './shared';

/**
 * The organisation's webhook signing secret (issue 28 item 6), sealed at rest like a provider key and opened only to
 * sign a delivery or to show a new one once. Every secret seen is registered for log redaction.
 */

// The sealed secret only opens on its own organisation's row.
const sealContext = (orgId: string): string => `webhook_secrets:${orgId}`;

interface SecretRow {
  ciphertext: Buffer;
  iv: Buffer;
  tag: Buffer;
}

function sealed(box: SecretBox, orgId: string, secret: string): SecretRow & { org_id: string } {
  registerSecret(secret);
  return { org_id: orgId, ...box.seal(secret, sealContext(orgId)) };
}

/** The secret to sign with: made on first need (a delivery before anyone asked for one), never shown here. */
export async function signingSecret(db: DbOrTrx, box: SecretBox, orgId: string): Promise<string> {
  await unknownOrgAsNotFound(orgId, () =>
    db('webhook_secrets')
      .insert(sealed(box, orgId, newSigningSecret()))
      .onConflict('org_id')
      .ignore(),
  );
  const row = (await db('webhook_secrets').where({ org_id: orgId }).first('ciphertext', 'iv', 'tag')) as SecretRow;
  const secret = box.open(row, sealContext(orgId));
  registerSecret(secret);
  return secret;
}

/** A new secret in place of the old one (or the first), returned to be shown once: deliveries from now on sign with it. */
export async function rotateSigningSecret(db: DbOrTrx, box: SecretBox, orgId: string): Promise<string> {
  const secret = newSigningSecret();
  await unknownOrgAsNotFound(orgId, () =>
    db('webhook_secrets')
      .insert({ ...sealed(box, orgId, secret), created_at: db.fn.now(), shown_at: db.fn.now() })
      .onConflict('org_id')
      .merge(),
  );
  return secret;
}

export interface SigningSecretState {
  createdAt: Date;
  /** Null when the secret was made by a delivery and never shown: only a rotation reveals one. */
  shownAt: Date | null;
}

export async function signingSecretState(db: DbOrTrx, orgId: string): Promise<SigningSecretState | null> {
  const row = (await db('webhook_secrets').where({ org_id: orgId }).first('created_at', 'shown_at')) as
    { created_at: Date; shown_at: Date | null } | undefined;
  return row ? { createdAt: row.created_at, shownAt: row.shown_at } : null;
}
