import vm from 'node:vm';
import { round } from './results';

/**
 * What the Temporal SDK's workflow sandbox pays per call into a workflow (issue 42): the SDK runs every call into the
 * workflow's V8 context (`activate`, each `tryUnblockConditions`, `concludeActivation`, `getAndResetSinkCalls`) through
 * `vm` with `timeout: isolateExecutionTimeout` (5 s by default; no option turns it off), and Node starts a watchdog
 * thread for each such call. This times the same trivial call in a context made as the SDK makes it
 * (`microtaskMode: 'afterEvaluate'`), with and without the timeout, alternating, so the difference is the watchdog's.
 * An express call makes about 14 such calls and a panel about 32 (counted in the worker thread, docs/performance.md).
 * Asserts nothing. `node --import tsx bench/vm-timeout.ts`
 */
const CALLS = Number(process.env.BENCH_VM_CALLS ?? 5_000);
const ROUNDS = 3;

function timeCalls(timeout: number | undefined): { wallUs: number; cpuUs: number } {
  const context = vm.createContext({}, { microtaskMode: 'afterEvaluate' });
  const script = new vm.Script('globalThis.n = (globalThis.n ?? 0) + 1');
  const options = timeout === undefined ? {} : { timeout };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) script.runInContext(context, options);
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wallUs: round((wallMs * 1000) / CALLS, 1), cpuUs: round((cpu.user + cpu.system) / CALLS, 1) };
}

const rows: { round: number; without: ReturnType<typeof timeCalls>; with5s: ReturnType<typeof timeCalls> }[] = [];
for (let r = 1; r <= ROUNDS; r++) rows.push({ round: r, without: timeCalls(undefined), with5s: timeCalls(5_000) });
console.log(`vm.runInContext, ${CALLS} calls a round; µs per call (wall / CPU of this process, every thread)`);
for (const { round: r, without, with5s } of rows)
  console.log(`round ${r}: no timeout ${without.wallUs} / ${without.cpuUs}; timeout 5 s ${with5s.wallUs} / ${with5s.cpuUs}`);
