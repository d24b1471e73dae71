/** When the supervisor restarts a crashed worker or API, and when it stops trying. */
export interface RestartPolicy {
  /** Delay before restarting after a first crash; it doubles with each crash of a streak, up to `maxDelayMs`. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** This many crashes within `windowMs` and the process is taken for broken: the supervisor gives up. */
  maxCrashes: number;
  /** Also how long a process must run for its next crash to start a new streak (back to `firstDelayMs`). */
  windowMs: number;
}

export const RESTART_POLICY: RestartPolicy = { firstDelayMs: 500, maxDelayMs: 10_000, maxCrashes: 5, windowMs: 60_000 };

export type RestartVerdict = { restart: true; delayMs: number; crashesInWindow: number } | { restart: false; crashesInWindow: number };

/** The crashes of one supervised process. */
export class CrashHistory {
  private recent: number[] = [];
  private streak = 0;

  constructor(private readonly policy: RestartPolicy = RESTART_POLICY) {}

  /** Records a crash at `now` (ms) of a process that had run for `ranMs`, and says whether and when to restart it. */
  record(now: number, ranMs: number): RestartVerdict {
    const { firstDelayMs, maxDelayMs, maxCrashes, windowMs } = this.policy;
    this.recent = [...this.recent.filter((t) => now - t < windowMs), now];
    this.streak = ranMs >= windowMs ? 1 : this.streak + 1;
    const crashesInWindow = this.recent.length;
    if (crashesInWindow >= maxCrashes) return { restart: false, crashesInWindow };
    return { restart: true, delayMs: Math.min(firstDelayMs * 2 ** (this.streak - 1), maxDelayMs), crashesInWindow };
  }
}
