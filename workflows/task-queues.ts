/** The worker polls both; `/healthz` requires a poller on each. */
export const TASK_QUEUES = {
  deliberation: 'deliberation',
  benchmark: 'benchmark',
} as const;

export type TaskQueue = (typeof TASK_QUEUES)[keyof typeof TASK_QUEUES];
