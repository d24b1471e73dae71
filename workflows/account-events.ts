import { isCancellation, log, proxyActivities } from '@temporalio/workflow';
import type { AccountEventActivities, AccountEventDelivery } from '../activities/account-events';
import { deliveryActivityOptions } from './run-callback';

/**
 * Account events (issue 41 item 4). One delivery workflow per event (its id derives from the event's, so an event
 * is delivered by one workflow whichever worker's dispatcher starts it): at least once, retried with the run
 * callbacks' policy (from QUORUM_CALLBACK_RETRY_MS, doubling to an hour, for a day), the same id and body each time.
 */
export interface AccountEventInput {
  eventId: string;
  retryInitialMs: number;
}

export async function accountEventWorkflow(input: AccountEventInput): Promise<AccountEventDelivery | { eventId: string; refused: string }> {
  const { deliverAccountEvent } = proxyActivities<AccountEventActivities>(deliveryActivityOptions(input.retryInitialMs));
  const { accountEventUndelivered } = proxyActivities<AccountEventActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '5 seconds', maximumInterval: '10 minutes' },
  });
  try {
    return await deliverAccountEvent({ eventId: input.eventId });
  } catch (err) {
    if (isCancellation(err)) throw err;
    const reason = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    log.warn('account event not delivered', { eventId: input.eventId, reason });
    await accountEventUndelivered({ eventId: input.eventId, reason });
    return { eventId: input.eventId, refused: reason };
  }
}

/**
 * The hourly upkeep, started by the Temporal Schedule `account-upkeep` (starters/account-upkeep.ts): raises the
 * time-based alerts (`trial.expiring`) and blanks the transcripts past their organisation's retention.
 */
export async function accountUpkeepWorkflow(): Promise<{
  trialAlerts: number;
  keyAlerts: number;
  receiptsBlanked: number;
  questionsBlanked: number;
}> {
  const { accountUpkeep } = proxyActivities<AccountEventActivities>({
    startToCloseTimeout: '10 minutes',
    retry: { initialInterval: '10 seconds', maximumInterval: '5 minutes', maximumAttempts: 5 },
  });
  return accountUpkeep();
}
