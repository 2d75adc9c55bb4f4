// RSS after a full GC, read the same way by every benchmark that reports
// it (Phronomy's and the peers', bench/peers): decision 0074.
//
// A full GC returns before V8's background threads have unmapped the pages
// it freed. After a burst of work that is tens of megabytes (60 MB after
// 10,000 suspensions at once), given back within a few milliseconds
// whether or not JavaScript runs meanwhile: RSS read at the instant the
// collection returns counts memory that is already garbage, and how much
// of it depends on where the unmapping threads are. So the RSS reported is
// read once it stopped falling, with no JavaScript running meanwhile: the
// main thread sleeps (`Atomics.wait`, so that it leaves the CPU to those
// threads on a loaded machine) and the event loop does not turn, so
// nothing of the measured program runs.

const pause = new Int32Array(new SharedArrayBuffer(4));

/** Two full GCs (`--expose-gc`; without it, none), then
 * `process.memoryUsage()` once RSS stopped falling for 200 ms (at most 3 s
 * of waiting). `rssRightAfterGc` is RSS read as the collections returned. */
export function memoryAfterGc(): NodeJS.MemoryUsage & { rssRightAfterGc: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const rssRightAfterGc = process.memoryUsage().rss;
  const began = performance.now();
  let last = rssRightAfterGc;
  let steadySince = began;
  while (performance.now() - began < 3000 && performance.now() - steadySince < 200) {
    Atomics.wait(pause, 0, 0, 10);
    const now = process.memoryUsage().rss;
    if (now < last) steadySince = performance.now();
    last = now;
  }
  return { ...process.memoryUsage(), rss: last, rssRightAfterGc };
}

/** How long a process stays idle before its RSS is read "at rest"
 * (decision 0109). The young generation that a burst grew (16 MiB per
 * semi-space, 32 MiB resident) shrinks at a memory-reducing GC: V8's
 * memory reducer runs one once the process has been idle some 8 s after
 * its last full GC. Measured after 10,000 suspensions: a full GC 2 s or 6 s
 * after the burst kept it, 10 s and 12 s after it was given back; 15 s
 * leaves a margin on a loaded machine. */
export const restMs = 15_000;

/** `memoryAfterGc()` after `restMs` with nothing to do: the RSS of a
 * process holding what it holds, at rest. The event loop turns meanwhile
 * (whatever the measured program does when idle, it does). */
export async function memoryAtRest(): Promise<ReturnType<typeof memoryAfterGc>> {
  await new Promise((resolve) => setTimeout(resolve, restMs));
  return memoryAfterGc();
}
