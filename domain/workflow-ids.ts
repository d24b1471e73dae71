/**
 * Every workflow id, built here and nowhere else (DESIGN §4): an id is the workflow's identity, so the same
 * request, run, question or quote always lands on the same workflow and is never started twice.
 */
export const workflowIds = {
  /** One deliberation per organisation and idempotency key. */
  deliberation: (orgId: string, idempotencyKey: string): string => `dlb/${orgId}/${idempotencyKey}`,
  /** The 30-day trial credit timer of one organisation. */
  trialCredit: (orgId: string): string => `trial/${orgId}`,
  /** A benchmark test run launched under an idempotency key. */
  testRun: (orgId: string, key: string): string => `bench/${orgId}/${key}`,
  /** A certification run launched under an idempotency key. */
  certification: (orgId: string, key: string): string => `cert/${orgId}/${key}`,
  /** One question of a run: a child whose id derives from its parent's. */
  question: (runWorkflowId: string, questionId: string): string => `${runWorkflowId}/q/${questionId}`,
  /** The completion callback of a run (issue 28 item 6): one delivery per run, a child whose id derives from its run's. */
  runCallback: (runWorkflowId: string): string => `${runWorkflowId}/callback`,
  /**
   * The run an advisor quote launches; approving twice finds the same workflow. `attempt` counts launches of the
   * quote that definitely failed (credited back), so a later approval never collides with a half-started one.
   */
  quote: (quoteId: string, attempt: number): string => `quote/${quoteId}/${attempt}`,
  /** The delivery of one account event (issue 41 item 4): one per event id. */
  accountEvent: (eventId: string): string => `account-event/${eventId}`,
} as const;
