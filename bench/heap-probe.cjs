'use strict';
/**
 * Preloaded (`node --require`) into the load bench's API+worker process, so into each of its threads too (a worker
 * thread inherits the parent's execArgv): the Temporal SDK's workflow threads run isolates of their own, whose heaps
 * `v8.getHeapStatistics()` on the main thread cannot see. Every isolate writes its own figures to
 * $BENCH_HEAP_PROBE_DIR/<pid>-<threadId>.json every 200 ms while $BENCH_HEAP_PROBE_DIR/on exists (the bench's memory
 * readings), for bench/memory-split.ts to read. Off, a tick is one stat: writing and renaming a file 5 times a second in
 * each isolate took about 14 ms of the process's CPU a second (1.1 s in a 79 s profile), 0.5–0.8 ms a call at 17–25
 * calls a second, all counted as Quorum's.
 */
const fs = require('node:fs');
const path = require('node:path');
const v8 = require('node:v8');
const { threadId } = require('node:worker_threads');

const dir = process.env.BENCH_HEAP_PROBE_DIR;
if (dir) {
  const file = path.join(dir, `${process.pid}-${threadId}.json`);
  const on = path.join(dir, 'on');
  const write = () => {
    if (!fs.existsSync(on)) return;
    const h = v8.getHeapStatistics();
    const newSpace = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    const figures = {
      threadId,
      usedBytes: h.used_heap_size,
      totalBytes: h.total_heap_size,
      physicalBytes: h.total_physical_size,
      newSpaceBytes: newSpace ? newSpace.physical_space_size : 0,
      externalBytes: h.external_memory,
    };
    // Renamed into place, so that a reader never sees half a file.
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(figures));
    fs.renameSync(`${file}.tmp`, file);
  };
  write();
  setInterval(write, 200).unref();
}
