import { expireTrialCredit } from '../db/repositories/trial-credit';
import type { ActivityDeps } from './deps';

/** Activities of the accounts workflows; bigint crosses Temporal's JSON payloads as a decimal string. */
export function createAccountActivities({ db, log }: Pick<ActivityDeps, 'db' | 'log'>) {
  return {
    async expireTrialCredit(input: { orgId: string }): Promise<{ deductedMicros: string }> {
      const result = await expireTrialCredit(db, input.orgId);
      if (!result.alreadyExpired)
        log.info('trial credit expired', { orgId: input.orgId, deductedMicros: result.deductedMicros.toString() });
      return { deductedMicros: result.deductedMicros.toString() };
    },
  };
}

export type AccountActivities = ReturnType<typeof createAccountActivities>;
