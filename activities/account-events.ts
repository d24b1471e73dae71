import { ApplicationFailure } from '@temporalio/activity';
import { eventForDelivery, raiseAccountEvent, recordAttempt, trialsEndingWithin } from '../db/repositories/account-events';
import { keysExpiringBetween } from '../db/repositories/api-keys';
import { PURGE_BATCH, purgeExpiredTranscripts } from '../db/repositories/retention';
import { signingSecret } from '../db/repositories/webhook-secrets';
import { EXPIRY_ALERT_DAYS, expiryAlertDue, type AccountEventState } from '../domain/account-events';
import { microsToUsd } from '../domain/money';
import { TRIAL_PERIOD_MS } from '../domain/trial';
import type { Db } from '../db/knex';
import { sendSigned } from './callbacks';
import type { ActivityDeps } from './deps';

/**
 * Account events (issue 41 item 4): one signed attempt of an event's delivery, on the run callbacks' scheme and
 * failure rules (activities/callbacks.ts `sendSigned`), each attempt recorded on the event's row for the console;
 * and the hourly upkeep (workflows/account-events.ts): the time-based alerts raised, expired transcripts blanked.
 */

export interface AccountEventDelivery {
  eventId: string;
  state: AccountEventState;
  status?: number;
}

/** `trial.expiring` for every trial whose next alert is due: 7 days before its end, then 1 day before; once each. */
async function raiseTrialAlerts(db: Db): Promise<number> {
  const longest = Math.max(...EXPIRY_ALERT_DAYS) * 86_400_000;
  let raised = 0;
  for (const trial of await trialsEndingWithin(db, { withinMs: longest, periodMs: TRIAL_PERIOD_MS })) {
    const days = expiryAlertDue(trial.endsAt.getTime() - Date.now());
    if (days === null) continue;
    const id = await raiseAccountEvent(db, {
      orgId: trial.orgId,
      type: 'trial.expiring',
      dedupeKey: `trial.expiring:${days}d`,
      data: { expires_at: trial.endsAt.toISOString(), days_before: days, trial_credit_usd: microsToUsd(trial.creditMicros) },
    });
    if (id) raised++;
  }
  return raised;
}

/** `key.expiring` for every unrevoked key whose next alert is due: 7 days before its expiry, then 1 day before; once each. */
async function raiseKeyExpiryAlerts(db: Db): Promise<number> {
  const now = Date.now();
  let raised = 0;
  for (const key of await keysExpiringBetween(db, new Date(now), new Date(now + Math.max(...EXPIRY_ALERT_DAYS) * 86_400_000))) {
    const days = key.expiresAt && expiryAlertDue(key.expiresAt.getTime() - now);
    if (!days) continue;
    const id = await raiseAccountEvent(db, {
      orgId: key.orgId,
      type: 'key.expiring',
      dedupeKey: `key.expiring:${key.id}:${days}d`,
      data: { key_id: key.id, key: key.display, label: key.label, expires_at: key.expiresAt?.toISOString() ?? null, days_before: days },
    });
    if (id) raised++;
  }
  return raised;
}

export function createAccountEventActivities(deps: Pick<ActivityDeps, 'db' | 'log' | 'config' | 'box'>) {
  const { db, config, box } = deps;
  return {
    /** One attempt: the stored body, signed with the organisation's secret as it is now, to its URL as it is now. */
    async deliverAccountEvent(input: { eventId: string }): Promise<AccountEventDelivery> {
      const event = await eventForDelivery(db, input.eventId);
      if (!event) throw ApplicationFailure.nonRetryable(`no account event ${input.eventId}`, 'callback_refused');
      if (event.state !== 'pending') return { eventId: input.eventId, state: event.state };
      if (!event.url) {
        await recordAttempt(db, input.eventId, { state: 'no_endpoint', counted: false });
        return { eventId: input.eventId, state: 'no_endpoint' };
      }
      try {
        const status = await sendSigned({
          url: event.url,
          body: event.body,
          eventId: input.eventId,
          secret: await signingSecret(db, box, event.orgId),
          production: config.QUORUM_ENV === 'production',
        });
        await recordAttempt(db, input.eventId, { state: 'delivered', status, counted: true });
        return { eventId: input.eventId, state: 'delivered', status };
      } catch (err) {
        const final = err instanceof ApplicationFailure && err.nonRetryable;
        await recordAttempt(db, input.eventId, {
          state: final ? 'failed' : 'pending',
          error: String((err as Error).message),
          counted: true,
        });
        throw err;
      }
    },

    /** A delivery that gave up (a day of tries): recorded so the console says so. */
    async accountEventUndelivered(input: { eventId: string; reason: string }): Promise<void> {
      await recordAttempt(db, input.eventId, { state: 'failed', error: input.reason, counted: false });
    },

    /** The hourly upkeep: time-based alerts raised (a new kind adds its scan here), transcripts past retention blanked. */
    async accountUpkeep(): Promise<{ trialAlerts: number; keyAlerts: number; receiptsBlanked: number; questionsBlanked: number }> {
      const trialAlerts = await raiseTrialAlerts(db);
      const keyAlerts = await raiseKeyExpiryAlerts(db);
      let receiptsBlanked = 0;
      let questionsBlanked = 0;
      // In batches, so one statement never holds many rows' locks; until a batch comes back short.
      for (;;) {
        const purged = await purgeExpiredTranscripts(db);
        receiptsBlanked += purged.receipts;
        questionsBlanked += purged.questions;
        if (purged.receipts < PURGE_BATCH && purged.questions < PURGE_BATCH) break;
      }
      if (trialAlerts + keyAlerts + receiptsBlanked + questionsBlanked > 0)
        deps.log.info('account upkeep', { trialAlerts, keyAlerts, receiptsBlanked, questionsBlanked });
      return { trialAlerts, keyAlerts, receiptsBlanked, questionsBlanked };
    },
  };
}

export type AccountEventActivities = ReturnType<typeof createAccountEventActivities>;
