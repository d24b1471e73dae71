import { accountSettings, saveAccountSettings } from '../db/repositories/account-settings';
import { recentAccountEvents, type AccountEventLine } from '../db/repositories/account-events';
import { QuorumError } from '../domain/errors';
import { microsToUsd, usdToMicros } from '../domain/money';
import { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS } from '../domain/retention';
import { assertPublicCallbackHost, CallbackAddressRefused } from '../infra/callback-address';
import { recordActivity, requireAdminKey } from './activity';
import { orgActedOn, requireOwner, type Principal } from './principal';
import type { StoreDeps } from './deps';

/**
 * The owner's alert and retention settings (issue 41 items 4 and 5): where account events are POSTed, the
 * `balance.low` threshold, and how long transcripts are kept. A change here is an account change: the activity log
 * (issue 41 item 6) records it from `changeAccountSettings`.
 */
export interface AccountSettingsView {
  webhookUrl: string | null;
  lowBalanceMicros: bigint;
  /** As set; null: the default (`effectiveRetentionDays`). */
  retentionDays: number | null;
  effectiveRetentionDays: number;
}

/** What changes; a field left out keeps its value (the console's form sends all three, the API one group). */
export interface AccountSettingsInput {
  webhookUrl?: string | null;
  /** Dollars, as the form's text or the API's number, at most six decimals. */
  lowBalanceUsd?: string | number;
  retentionDays?: number | null;
}

/**
 * The organisation the settings are read or changed for: a person's (the console), the one the operator names, or an
 * admin key's own (`/v1/organization/alerts`, `/v1/organization/retention`); any other key is refused.
 */
function settingsOrg(actor: Principal): string {
  if (actor.via === 'key') requireAdminKey(actor);
  return orgActedOn(actor);
}

export async function accountSettingsOf(deps: StoreDeps, actor: Principal): Promise<AccountSettingsView> {
  const settings = await accountSettings(deps.db, settingsOrg(actor));
  if (!settings) throw new QuorumError('not_found', 'No such organisation.');
  return { ...settings, effectiveRetentionDays: settings.retentionDays ?? DEFAULT_RETENTION_DAYS };
}

function webhookUrlOf(raw: string | null): string | null {
  if (raw === null || raw.trim() === '') return null;
  const url = raw.length <= 2048 ? URL.parse(raw.trim()) : null;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '')
    throw new QuorumError('invalid_request', 'The webhook URL must be an http or https URL without credentials, at most 2048 characters.', {
      param: 'webhook_url',
    });
  return url.href;
}

function thresholdMicros(usd: string | number): bigint {
  let micros: bigint | undefined;
  try {
    micros = usdToMicros(usd);
  } catch {
    micros = undefined;
  }
  if (micros === undefined || micros < 0n || micros > 1_000_000n * 1_000_000n)
    throw new QuorumError('invalid_request', 'The low-balance threshold is a number of dollars from 0 (off) to 1,000,000.', {
      param: 'balance_low_usd',
    });
  return micros;
}

/**
 * Validated, every field sent, before anything is saved; then saved at once. The owner in the console, the operator,
 * or the organisation's admin key over the API (which the owner alone makes). In production a webhook URL inside the
 * deployment is refused here, and at each delivery.
 */
export async function changeAccountSettings(
  deps: StoreDeps & { publicCallbacksOnly?: boolean },
  actor: Principal,
  input: AccountSettingsInput,
): Promise<AccountSettingsView> {
  if (actor.via !== 'key') requireOwner(actor, 'Only the organisation owner changes alerts and retention.');
  const orgId = settingsOrg(actor);
  const webhookUrl = input.webhookUrl === undefined ? undefined : webhookUrlOf(input.webhookUrl);
  if (webhookUrl) {
    try {
      await assertPublicCallbackHost(new URL(webhookUrl), deps.publicCallbacksOnly === true);
    } catch (err) {
      if (!(err instanceof CallbackAddressRefused)) throw err;
      throw new QuorumError('callback_url_refused', `The webhook URL must reach a public address: ${err.reason}.`, {
        param: 'webhook_url',
      });
    }
  }
  const sentMicros = input.lowBalanceUsd === undefined ? undefined : thresholdMicros(input.lowBalanceUsd);
  const sentDays = input.retentionDays;
  if (sentDays != null && (!Number.isInteger(sentDays) || sentDays < 0 || sentDays > MAX_RETENTION_DAYS))
    throw new QuorumError('invalid_request', `Transcript retention is a whole number of days from 0 to ${MAX_RETENTION_DAYS}.`, {
      param: 'transcript_retention_days',
    });
  await deps.db.transaction(async (trx) => {
    // Locked, so two changes of different fields at once each keep the other's.
    const before = await accountSettings(trx, orgId, { lock: true });
    if (!before) throw new QuorumError('not_found', 'No such organisation.');
    const after = {
      webhookUrl: webhookUrl === undefined ? before.webhookUrl : webhookUrl,
      lowBalanceMicros: sentMicros ?? before.lowBalanceMicros,
      retentionDays: sentDays === undefined ? before.retentionDays : sentDays,
    };
    await saveAccountSettings(trx, orgId, after);
    if (before.retentionDays !== after.retentionDays)
      await recordActivity(trx, orgId, actor, {
        kind: 'retention.changed',
        detail: { from_days: before.retentionDays, to_days: after.retentionDays, default_days: DEFAULT_RETENTION_DAYS },
      });
    // The URL's host only: a receiver's path or query may carry a token of its own.
    if (before.webhookUrl !== after.webhookUrl || before.lowBalanceMicros !== after.lowBalanceMicros)
      await recordActivity(trx, orgId, actor, {
        kind: 'alerts.changed',
        detail: {
          webhook_host: after.webhookUrl === null ? null : new URL(after.webhookUrl).host,
          balance_low_usd: microsToUsd(after.lowBalanceMicros),
        },
      });
  });
  return accountSettingsOf(deps, actor);
}

/** The organisation's latest account events and how their delivery went (the console's list, an admin key's read). */
export async function accountEventsOf(deps: StoreDeps, actor: Principal): Promise<AccountEventLine[]> {
  return recentAccountEvents(deps.db, settingsOrg(actor));
}
