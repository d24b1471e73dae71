/**
 * At most `limit` holders at once; the rest wait in arrival order. A waiter gives up when its signal fires (the
 * call's deadline or its caller's cancellation), and the promise rejects with nothing more: the caller says why.
 */
export class Slots {
  private held = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {}

  /** Resolves with the slot's release (safe to call twice), once one is free. */
  acquire(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(new Error('aborted before a slot was free'));
    if (this.held < this.limit) {
      this.held += 1;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const grant = (): void => {
        signal.removeEventListener('abort', onAbort);
        this.held += 1;
        resolve(this.releaser());
      };
      const onAbort = (): void => {
        const i = this.waiting.indexOf(grant);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(new Error('aborted while waiting for a slot'));
      };
      this.waiting.push(grant);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= 1;
      this.waiting.shift()?.();
    };
  }
}
