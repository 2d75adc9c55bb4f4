// `npm run bench:suspended-heap`: what one suspended execution keeps on
// the JavaScript heap, by constructor. Two heap snapshots — after a
// warm-up, and after N more conversations were suspended for approval
// (the application keeping no Run) — and the difference of their objects,
// grouped by constructor name (or V8's node type), per execution. Prints
// figures, asserts nothing (docs/decisions/0052).
//
//   BENCH_SUSPENDED=10000 npm run bench:suspended-heap
//   BENCH_WAIT=timer|event BENCH_SUSPENDED=10000 npm run bench:suspended-heap
//
// BENCH_WAIT picks the wait each conversation suspends on: `approval` (a
// tool needing approval, the default), `timer` (a timer due in a day) or
// `event` (a keyed event wait with a day's timeout, its key its own).
//
// "(code)" is the JIT's compiled code and shrinks as N grows: read it as
// noise. RSS is not measured here (bench:conversations does): this is
// where the live heap goes.

import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeHeapSnapshot } from "node:v8";
import { z } from "zod";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import { Phronomy, timer, tool, waitForEvent, type DefinedAgent } from "../../host/index.js";

const SUSPENDED = Number(process.env.BENCH_SUSPENDED ?? 10_000);
const WARM_UP = 50;
const SHOWN = 20;
const WAIT = process.env.BENCH_WAIT ?? "approval";
if (!["approval", "timer", "event"].includes(WAIT)) throw new Error(`BENCH_WAIT must be approval, timer or event, not ${WAIT}`);
const DAY_MS = 24 * 60 * 60 * 1000;

interface Group {
  count: number;
  bytes: number;
}

/** Self sizes of a snapshot's nodes, grouped by constructor (objects and
 * closures) or node type (everything else). */
async function groups(file: string): Promise<Map<string, Group>> {
  const snapshot = JSON.parse(await readFile(file, "utf8")) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf("type");
  const nameAt = fields.indexOf("name");
  const sizeAt = fields.indexOf("self_size");
  const found = new Map<string, Group>();
  for (let at = 0; at < snapshot.nodes.length; at += width) {
    const type = types[snapshot.nodes[at + typeAt]!]!;
    const name = type === "object" ? snapshot.strings[snapshot.nodes[at + nameAt]!]! : type === "closure" ? "closure" : `(${type})`;
    const group = found.get(name) ?? { count: 0, bytes: 0 };
    group.count += 1;
    group.bytes += snapshot.nodes[at + sizeAt]!;
    found.set(name, group);
  }
  return found;
}

function suspend(support: DefinedAgent, prefix: string, count: number): Promise<void> {
  let suspended = 0;
  return new Promise((resolve) => {
    for (let index = 0; index < count; index += 1) {
      support.conversation(`${prefix}-${index}`).start("refund me", {
        onEvent: (event) => {
          if (event.type === "approval_required" && ++suspended === count) resolve();
        },
      });
    }
  });
}

/** The tool the scripted model calls: it suspends on the wait BENCH_WAIT names. */
function waitingTool() {
  if (WAIT === "timer") return timer({ inputSchema: z.object({ amount: z.number() }), until: () => DAY_MS });
  if (WAIT === "event")
    return waitForEvent({
      inputSchema: z.object({ amount: z.number() }),
      key: () => `paid:${keyed++}`,
      payloadSchema: z.object({ ok: z.boolean() }),
      timeoutMs: DAY_MS,
    });
  return tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: () => true, execute: () => "ok" });
}
let keyed = 0;

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc (npm run bench:suspended-heap does)");
const directory = await mkdtemp(join(tmpdir(), "phronomy-suspended-heap-"));
const env = await Phronomy.open({ store: join(directory, "store.db"), synchronous: "NORMAL" });
try {
  const refund = waitingTool();
  const model = scriptedModel(({ messages }) =>
    messages.at(-1)?.role === "tool" ? { text: "refunded" } : { toolCalls: [{ toolName: "refund", input: { amount: 30 } }] },
  );
  const support = env.agent({ name: "support", model, tools: { refund }, memoryWindow: 1 });
  await support.ready;
  await suspend(support, "warm", WARM_UP);
  gc();
  const before = await groups(writeHeapSnapshot(join(directory, "before.heapsnapshot")));
  await suspend(support, "user", SUSPENDED);
  await new Promise((resolve) => setTimeout(resolve, 500));
  // The Runs dropped are collected; the weak tails a suspended execution
  // kept of them are swept within 2 s, those that outlived a first sweep
  // within 5 s more (docs/decisions/0066, dormant-executions.ts).
  gc();
  await new Promise((resolve) => setTimeout(resolve, 7_500));
  gc();
  const after = await groups(writeHeapSnapshot(join(directory, "after.heapsnapshot")));
  const rows = [...after]
    .map(([name, group]) => ({
      name,
      count: (group.count - (before.get(name)?.count ?? 0)) / SUSPENDED,
      bytes: (group.bytes - (before.get(name)?.bytes ?? 0)) / SUSPENDED,
    }))
    .filter((row) => row.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
  const total = rows.reduce((sum, row) => sum + row.bytes, 0);
  const code = rows.find((row) => row.name === "(code)")?.bytes ?? 0;
  console.log(
    `${SUSPENDED.toLocaleString("en-US")} conversations suspended (${WAIT} wait), no Run kept: ${total.toFixed(0)} B of live heap each (${(total - code).toFixed(0)} B without the JIT's code)`,
  );
  console.log("   bytes  objects  constructor or node type (per suspended execution)");
  for (const row of rows.slice(0, SHOWN)) console.log(`${row.bytes.toFixed(0).padStart(8)} ${row.count.toFixed(2).padStart(8)}  ${row.name.slice(0, 70)}`);
} finally {
  await env.close();
  await rm(directory, { recursive: true, force: true });
}
