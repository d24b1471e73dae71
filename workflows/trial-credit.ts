import { proxyActivities, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { AccountActivities } from '../activities/accounts';
import { TRIAL_PERIOD_MS, trialEndsAt } from '../domain/trial';
import { QuorumOrg } from './search-attributes';

const { expireTrialCredit } = proxyActivities<AccountActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '5 seconds', maximumInterval: '10 minutes' },
});

export interface TrialCreditInput {
  orgId: string;
  /** ISO time the trial began (the organisation's creation), so a timer started late still ends on time. */
  trialStartedAt: string;
  /** 30 days unless a test shortens it. */
  periodMs?: number;
}

/** DESIGN §7: a durable timer per organisation; when it fires, the unused trial credit is deducted once. */
export async function trialCreditWorkflow(input: TrialCreditInput): Promise<{ deductedMicros: string }> {
  upsertSearchAttributes([{ key: QuorumOrg, value: input.orgId }]);
  const remaining = trialEndsAt(new Date(input.trialStartedAt), input.periodMs ?? TRIAL_PERIOD_MS).getTime() - Date.now();
  if (remaining > 0) await sleep(remaining);
  return expireTrialCredit({ orgId: input.orgId });
}
