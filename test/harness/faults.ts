// For tests that kill, stop and restart processes of the stack.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { temporal } from '@temporalio/proto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';

/** Resolves once `check` holds, polled every 50 ms; fails naming `what` after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not so after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** When the exit was seen (Date.now()). */
  at: number;
}

/** The child's exit, to await later: call it before the child can exit (right after signalling it). */
export function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })));
}

export interface ProcessInfo {
  pid: number;
  ppid: number;
  cmd: string;
}

/** Every process of this machine we can see. */
export function listProcesses(): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      // Field 4 of /proc/PID/stat is the parent's id; the command name before it is in parentheses.
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      found.push({ pid: Number(pid), ppid, cmd: fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ') });
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

/**
 * Whether the workflow's engine calls are out: a run's question shows them as started activities (at least `count`);
 * a deliberation runs them as local activities inside its one workflow task (DESIGN §13), which the server shows only
 * as that task started: out once it has been so for `settleMs` (its first step, the hold, takes milliseconds).
 */
export async function engineCallsOut(client: Client, workflowId: string, { count = 1, settleMs = 300 } = {}): Promise<boolean> {
  try {
    const { raw } = await client.workflow.getHandle(workflowId).describe();
    const started = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
    if ((raw.pendingActivities ?? []).filter((a) => a.state === started).length >= count) return true;
    const task = raw.pendingWorkflowTask;
    const taskStarted = temporal.api.enums.v1.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED;
    const startedMs = Number(task?.startedTime?.seconds ?? 0) * 1000 + (task?.startedTime?.nanos ?? 0) / 1e6;
    return task?.state === taskStarted && Date.now() - startedMs >= settleMs;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

export interface CompletionReply {
  status: number;
  body: {
    choices?: { message: { content: string } }[];
    svc?: { request_id?: string; replayed?: boolean; billed_usd?: number };
    error?: { code: string; message: string };
  };
}

/** A Form B chat completion over HTTP, as a client retrying by `Idempotency-Key` sends it; rejects when the connection dies. */
export async function postCompletion(
  url: string,
  apiKey: string,
  idempotencyKey: string,
  opts: { model?: string; content?: string } = {},
): Promise<CompletionReply> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({
      model: opts.model ?? 'QRM:PANL',
      messages: [{ role: 'user', content: opts.content ?? 'Why do leaves change colour in autumn? Compare the pigments involved.' }],
    }),
  });
  return { status: res.status, body: (await res.json()) as CompletionReply['body'] };
}

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
