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

/** One process's memory from /proc/<pid>/smaps_rollup, kB; PSS splits each shared page among the processes mapping it. */
export interface ProcMemory {
  pid: number;
  ppid: number;
  comm: string;
  args: string[];
  rssKb: number;
  pssKb: number;
  /** PSS of its anonymous memory (heaps, stacks), of file-backed pages (code, mapped files), of shared memory. */
  pssAnonKb: number;
  pssFileKb: number;
  pssShmemKb: number;
}

function readMemory(s: ProcStat): ProcMemory | undefined {
  let rollup: string;
  let cmdline: string;
  try {
    rollup = fs.readFileSync(`/proc/${s.pid}/smaps_rollup`, 'utf8');
    cmdline = fs.readFileSync(`/proc/${s.pid}/cmdline`, 'utf8');
  } catch {
    return undefined; // exited, or a kernel thread
  }
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0);
  return {
    pid: s.pid,
    ppid: s.ppid,
    comm: s.comm,
    args: cmdline.split('\0').filter((a) => a !== ''),
    rssKb: kb('Rss'),
    pssKb: kb('Pss'),
    pssAnonKb: kb('Pss_Anon'),
    pssFileKb: kb('Pss_File'),
    pssShmemKb: kb('Pss_Shmem'),
  };
}

/** Memory of every process in the trees under `roots` (each root and its descendants, once), in one snapshot. */
export function treeMemory(roots: readonly number[]): ProcMemory[] {
  const stats = allStats();
  const descendants = descendantsOf(stats);
  const inTrees = new Map<number, ProcStat>();
  for (const pid of roots) {
    const root = stats.find((s) => s.pid === pid);
    for (const s of [...(root ? [root] : []), ...descendants(pid)]) inTrees.set(s.pid, s);
  }
  return [...inTrees.values()].flatMap((s) => readMemory(s) ?? []);
}

const PAGE_KB = 4;

/** Present pages' frame numbers of one process, from /proc/<pid>/pagemap (root only: others read 0), over its resident mappings. */
function framesOf(pid: number): number[] | undefined {
  let smaps: string;
  let fd: number;
  try {
    smaps = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8');
    fd = fs.openSync(`/proc/${pid}/pagemap`, 'r');
  } catch {
    return undefined;
  }
  const frames: number[] = [];
  try {
    let range: [number, number] | undefined;
    for (const line of smaps.split('\n')) {
      const head = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line);
      if (head) range = [parseInt(head[1], 16), parseInt(head[2], 16)];
      else if (range && line.startsWith('Rss:') && !/^Rss:\s+0 kB/.test(line)) {
        const pages = (range[1] - range[0]) / 4096;
        const buf = Buffer.alloc(pages * 8);
        fs.readSync(fd, buf, 0, buf.length, (range[0] / 4096) * 8);
        for (let i = 0; i < pages; i++) {
          const high = buf.readUInt32LE(i * 8 + 4);
          // Bit 63: present; bits 0-54: the frame number (0 when this process may not see it).
          if (high & 0x80000000) frames.push((high & 0x7fffff) * 2 ** 32 + buf.readUInt32LE(i * 8));
        }
      }
    }
  } catch {
    return undefined; // exited while being read
  } finally {
    fs.closeSync(fd);
  }
  return frames.length > 0 && frames.every((f) => f === 0) ? undefined : frames;
}

/**
 * PSS as if these processes ran alone on the machine, kB by pid: each resident page split among the processes of this
 * set that map it, not among every process (the kernel's PSS also splits Node's or Temporal's binary with any other
 * stack running beside, which makes a figure depend on the neighbours). Undefined without root (no frame numbers).
 */
export function pssAmong(pids: readonly number[]): Map<number, number> | undefined {
  const framesByPid = new Map<number, number[]>();
  for (const pid of pids) {
    const frames = framesOf(pid);
    if (!frames) return undefined;
    framesByPid.set(pid, frames);
  }
  const mappers = new Map<number, number>();
  for (const frames of framesByPid.values()) for (const f of new Set(frames)) mappers.set(f, (mappers.get(f) ?? 0) + 1);
  return new Map(
    [...framesByPid.entries()].map(([pid, frames]) => [
      pid,
      [...new Set(frames)].reduce((kb, f) => kb + PAGE_KB / (mappers.get(f) ?? 1), 0),
    ]),
  );
}
