import fs from 'node:fs';

/**
 * CPU and memory of the stack's processes read from /proc (Linux), so a figure covers every process of the stack and
 * not just the one running the bench: the API, the worker, the Temporal dev server, and Postgres with its backends.
 */

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux x86-64 and arm64). */
const TICKS_PER_SECOND = 100;

interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  /** utime + stime of the process itself, ms. */
  selfMs: number;
  /** cutime + cstime: CPU of its children that exited and were reaped, ms. */
  reapedMs: number;
  rssBytes: number;
}

function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // exited between the listing and the read
  }
  // comm sits in parentheses and may hold spaces: the fields after it start at the last ')'.
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const f = text.slice(close + 2).split(' ');
  // f[0] is field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17, rss (pages) 24.
  const tick = (i: number): number => (Number(f[i - 3]) * 1000) / TICKS_PER_SECOND;
  return {
    pid,
    ppid: Number(f[1]),
    comm,
    selfMs: tick(14) + tick(15),
    reapedMs: tick(16) + tick(17),
    rssBytes: Number(f[24 - 3]) * 4096,
  };
}

function allStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = readStat(Number(name));
    if (s) out.push(s);
  }
  return out;
}

/** A function listing every descendant of a pid in one snapshot of the process table. */
function descendantsOf(stats: readonly ProcStat[]): (pid: number) => ProcStat[] {
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  return (pid) => {
    const out: ProcStat[] = [];
    const todo = [...(children.get(pid) ?? [])];
    for (let s = todo.pop(); s !== undefined; s = todo.pop()) {
      out.push(s);
      todo.push(...(children.get(s.pid) ?? []));
    }
    return out;
  };
}

/** Processes whose command line matches, as [pid, ...]: how the bench finds the servers it did not fork itself. */
export function findProcesses(match: (comm: string, args: readonly string[]) => boolean): number[] {
  return allStats()
    .filter((s) => {
      let args: string[];
      try {
        args = fs.readFileSync(`/proc/${s.pid}/cmdline`, 'utf8').split('\0');
      } catch {
        return false;
      }
      return match(s.comm, args);
    })
    .map((s) => s.pid);
}

export type CpuSample = Record<string, number>;

/**
 * CPU used so far by each group of process trees (name → root pids), ms: each process's own time plus its reaped
 * children's, so a Postgres backend or a bundler child that came and went is not lost; `bench` is this process.
 */
export function sampleCpu(groups: Readonly<Record<string, readonly number[]>>): CpuSample {
  const stats = allStats();
  const descendants = descendantsOf(stats);
  const sample: CpuSample = {};
  for (const [name, roots] of Object.entries(groups)) {
    sample[name] = 0;
    for (const pid of roots) {
      const root = stats.find((s) => s.pid === pid);
      for (const s of [...(root ? [root] : []), ...descendants(pid)]) sample[name] += s.selfMs + s.reapedMs;
    }
  }
  const self = readStat(process.pid);
  sample.bench = self ? self.selfMs : 0;
  return sample;
}

/** Per-group difference of two samples, ms. */
export function cpuDelta(before: CpuSample, after: CpuSample): CpuSample {
  return Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]));
}

/** Resident memory of one process and everything under it, bytes. */
export function treeRss(pid: number): number {
  const stats = allStats();
  const root = stats.find((s) => s.pid === pid);
  return [...(root ? [root] : []), ...descendantsOf(stats)(pid)].reduce((n, s) => n + s.rssBytes, 0);
}
