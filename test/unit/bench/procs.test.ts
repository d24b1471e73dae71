import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { pssAmong } from '../../../bench/procs';

/** bench:memory's PSS among the stack's own processes, held to the kernel's own RSS of the same processes. */

/** The kernel's resident size of a process, kB. */
function rssKb(pid: number): number {
  return Number(/^Rss:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1]);
}

/** An idle Node process, resolved once it has started (so its resident pages stay put while they are read). */
async function idleNode(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', 'process.stdout.write("up"); setInterval(() => {}, 1000)'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise((resolve) => child.stdout?.once('data', resolve));
  return child;
}

describe('bench/procs: PSS among a set of processes', function () {
  this.timeout(20_000);
  const children: ChildProcess[] = [];
  after(() => children.forEach((c) => c.kill()));

  it('counts every resident page of a process alone in its set, and splits the pages two processes share', async function () {
    const [a, b] = [await idleNode(), await idleNode()];
    children.push(a, b);
    const [pa, pb] = [a.pid ?? -1, b.pid ?? -1];
    const alone = pssAmong([pa]);
    // Frame numbers are root's to read: elsewhere the bench falls back to the kernel's PSS.
    if (!alone) return this.skip();
    const [rssA, rssB] = [rssKb(pa), rssKb(pb)];
    assert.ok(Math.abs((alone.get(pa) ?? 0) - rssA) <= rssA * 0.02, `alone ${String(alone.get(pa))} kB vs RSS ${rssA} kB`);

    const both = pssAmong([pa, pb]);
    assert.ok(both);
    const [sa, sb] = [both.get(pa) ?? 0, both.get(pb) ?? 0];
    assert.ok(sa <= rssA * 1.02 && sb <= rssB * 1.02, `each at most its RSS: ${sa} / ${rssA}, ${sb} / ${rssB}`);
    // Two Node processes share the binary's code they both run (tens of MB) and count it once between them.
    assert.ok(sa + sb < rssA + rssB - 10 * 1024, `together ${sa + sb} kB vs RSS ${rssA + rssB} kB`);
    assert.ok(sa + sb >= Math.max(rssA, rssB) * 0.98, `together at least the larger one: ${sa + sb} vs ${Math.max(rssA, rssB)}`);
  });
});
