import { accountSettings, saveAccountSettings } from '../db/repositories/account-settings';
import { recentAccountEvents, type AccountEventLine } from '../db/repositories/account-events';
import { QuorumError } from '../domain/errors';
import { microsToUsd, usdToMicros } from '../domain/money';
import { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS } from '../domain/retention';
import { assertPublicCallbackHost, CallbackAddressRefused } from '../infra/callback-address';
import { orgActedOn, requireOwner, type Principal } from './principal';
import { recordActivity } from './activity';
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

export interface AccountSettingsInput {
  webhookUrl: string | null;
  /** Dollars as text (the form's field), at most six decimals. */
  lowBalanceUsd: string;
  retentionDays: number | null;
}

export async function accountSettingsOf(deps: StoreDeps, principal: Principal): Promise<AccountSettingsView> {
  const settings = await accountSettings(deps.db, orgActedOn(principal));
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

function thresholdMicros(usd: string): bigint {
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

/** Validated and saved at once; in production a webhook URL inside the deployment is refused here, and at each delivery. */
export async function changeAccountSettings(
  deps: StoreDeps & { publicCallbacksOnly?: boolean },
  principal: Principal,
  input: AccountSettingsInput,
): Promise<AccountSettingsView> {
  requireOwner(principal, 'Only the organisation owner changes alerts and retention.');
  const webhookUrl = webhookUrlOf(input.webhookUrl);
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
  const lowBalanceMicros = thresholdMicros(input.lowBalanceUsd);
  const days = input.retentionDays;
  if (days !== null && (!Number.isInteger(days) || days < 0 || days > MAX_RETENTION_DAYS))
    throw new QuorumError('invalid_request', `Transcript retention is a whole number of days from 0 to ${MAX_RETENTION_DAYS}.`, {
      param: 'transcript_retention_days',
    });
  const orgId = orgActedOn(principal);
  await deps.db.transaction(async (trx) => {
    const before = await accountSettings(trx, orgId);
    await saveAccountSettings(trx, orgId, { webhookUrl, lowBalanceMicros, retentionDays: days });
    if (before?.retentionDays !== days)
      await recordActivity(trx, orgId, principal, {
        kind: 'retention.changed',
        detail: { from_days: before?.retentionDays ?? null, to_days: days, default_days: DEFAULT_RETENTION_DAYS },
      });
    // The URL's host only: a receiver's path or query may carry a token of its own.
    if (before?.webhookUrl !== webhookUrl || before.lowBalanceMicros !== lowBalanceMicros)
      await recordActivity(trx, orgId, principal, {
        kind: 'alerts.changed',
        detail: { webhook_host: webhookUrl === null ? null : new URL(webhookUrl).host, balance_low_usd: microsToUsd(lowBalanceMicros) },
      });
  });
  return accountSettingsOf(deps, principal);
}

/** The organisation's latest account events and how their delivery went (the console's list). */
export async function accountEventsOf(deps: StoreDeps, principal: Principal): Promise<AccountEventLine[]> {
  return recentAccountEvents(deps.db, orgActedOn(principal));
}
