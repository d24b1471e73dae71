import fs from 'node:fs';
import path from 'node:path';
import { round } from './results';

/**
 * Where a process's resident memory is, at one moment (issue 42 item 4): the kernel's split (/proc/<pid>/status:
 * anonymous, file-backed, shared) and, from bench/heap-probe.cjs, each V8 isolate's heap: the main thread's and the
 * other threads' (the Temporal SDK's workflow threads, one per task queue). What anonymous memory no heap accounts
 * for is native: glibc malloc (the Temporal core, V8's own malloc, sockets' buffers, ArrayBuffers), thread stacks.
 */
export interface MemorySplit {
  rssMb: number;
  anonMb: number;
  fileMb: number;
  /** The main isolate's heap: in use (live and not yet collected) and reserved; resident is `physical`. */
  mainHeap: HeapFigures;
  /** Every other isolate of the processes, summed. */
  threadHeaps: HeapFigures & { isolates: number };
  /** Anonymous memory no V8 heap page holds: malloc (ArrayBuffers and other external memory among it), stacks. */
  nativeMb: number;
}

interface HeapFigures {
  usedMb: number;
  totalMb: number;
  physicalMb: number;
  newSpaceMb: number;
  externalMb: number;
}

type ProbeField = 'usedBytes' | 'totalBytes' | 'physicalBytes' | 'newSpaceBytes' | 'externalBytes';
type Probe = Record<ProbeField, number> & { threadId: number };

const mb = (bytes: number): number => round(bytes / 2 ** 20, 1);

function statusKb(pid: number): Record<string, number> {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return {}; // exited
  }
  return Object.fromEntries([...text.matchAll(/^(\w+):\s+(\d+) kB$/gm)].map((m) => [m[1], Number(m[2])]));
}

function probes(pids: readonly number[], probeDir: string): Probe[] {
  const files = fs.existsSync(probeDir) ? fs.readdirSync(probeDir) : [];
  return files
    .filter((name) => name.endsWith('.json') && pids.some((pid) => name.startsWith(`${pid}-`)))
    .map((name) => JSON.parse(fs.readFileSync(path.join(probeDir, name), 'utf8')) as Probe);
}

function heapOf(list: readonly Probe[]): HeapFigures {
  const sum = (field: ProbeField): number => mb(list.reduce((n, p) => n + p[field], 0));
  return {
    usedMb: sum('usedBytes'),
    totalMb: sum('totalBytes'),
    physicalMb: sum('physicalBytes'),
    newSpaceMb: sum('newSpaceBytes'),
    externalMb: sum('externalBytes'),
  };
}

/** How often a probe writes its figures while on (bench/heap-probe.cjs). */
const PROBE_TICK_MS = 200;

/**
 * Runs `fn` with the probes on (bench/heap-probe.cjs writes only while `<probeDir>/on` exists, so that the other
 * phases do not pay for it), after two ticks, so that every isolate's file is fresh when `fn` reads it.
 */
export async function whileProbing<T>(probeDir: string, fn: () => Promise<T>): Promise<T> {
  const on = path.join(probeDir, 'on');
  fs.writeFileSync(on, '');
  try {
    await new Promise((resolve) => setTimeout(resolve, 2 * PROBE_TICK_MS));
    return await fn();
  } finally {
    fs.rmSync(on, { force: true });
  }
}

export function readMemorySplit(pids: readonly number[], probeDir: string): MemorySplit {
  const kb = pids.map(statusKb);
  const total = (field: string): number => kb.reduce((n, s) => n + (s[field] ?? 0), 0) * 1024;
  const list = probes(pids, probeDir);
  const mainHeap = heapOf(list.filter((p) => p.threadId === 0));
  const threads = list.filter((p) => p.threadId !== 0);
  const threadHeaps = { ...heapOf(threads), isolates: threads.length };
  const anonMb = mb(total('RssAnon'));
  return {
    rssMb: mb(total('VmRSS')),
    anonMb,
    fileMb: mb(total('RssFile') + total('RssShmem')),
    mainHeap,
    threadHeaps,
    nativeMb: round(anonMb - mainHeap.physicalMb - threadHeaps.physicalMb, 1),
  };
}

/** (peak − idle) / calls for every figure of the split, in kB a call. */
export function perCallKb(idle: MemorySplit, peak: MemorySplit, calls: number): Record<string, number> {
  const per = (a: number, b: number): number => round(((b - a) * 1024) / Math.max(1, calls), 0);
  return {
    rss: per(idle.rssMb, peak.rssMb),
    anon: per(idle.anonMb, peak.anonMb),
    mainHeapUsed: per(idle.mainHeap.usedMb, peak.mainHeap.usedMb),
    mainHeapPhysical: per(idle.mainHeap.physicalMb, peak.mainHeap.physicalMb),
    threadHeapsUsed: per(idle.threadHeaps.usedMb, peak.threadHeaps.usedMb),
    threadHeapsPhysical: per(idle.threadHeaps.physicalMb, peak.threadHeaps.physicalMb),
    native: per(idle.nativeMb, peak.nativeMb),
  };
}

export function splitText(s: MemorySplit): string {
  const heap = (h: HeapFigures): string =>
    `used ${h.usedMb} of ${h.totalMb} (resident ${h.physicalMb}, new space ${h.newSpaceMb}, external ${h.externalMb})`;
  return `RSS ${s.rssMb} MB = anon ${s.anonMb} + file ${s.fileMb}; main heap ${heap(s.mainHeap)}; ${s.threadHeaps.isolates} thread isolates ${heap(s.threadHeaps)}; native ${s.nativeMb}`;
}
