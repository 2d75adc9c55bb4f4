// The queue crash child: `node --import tsx test/crash/queue-child.ts <json>`
// (`QueueChildConfig`). It opens the store, defines the support agent with
// onBusy "enqueue", sends `messages` messages at once (the first runs, the
// others queue behind it), prints one JSON line per message once its
// execution id is known (for a queued one: once its enqueue committed), and
// kills itself with SIGKILL at the n-th kill point (`point:#n`): before and
// after every store operation — enqueues, preparations, barriers, terminal
// commits — and inside every tool call, after its side effect. Lines are
// written with writeSync, so everything printed before the kill reached the
// pipe.

import { writeSync } from "node:fs";
import { Phronomy } from "../../host/index.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { crashModel, idempotentLookup } from "./fixture.js";
import { messageInput, QUEUE_AGENT_ID, type QueueChildConfig, type QueueChildLine } from "./queue-fixture.js";

const config = JSON.parse(process.argv[2] ?? "{}") as QueueChildConfig;

function print(line: QueueChildLine): void {
  writeSync(1, `${JSON.stringify(line)}\n`);
}

const counts = new Map<string, number>();
let points = 0;

function reach(label: string): void {
  const occurrence = (counts.get(label) ?? 0) + 1;
  counts.set(label, occurrence);
  points += 1;
  const point = `${label}#${occurrence}`;
  if (config.trace) print({ type: "point", point, index: points });
  if (`point:#${points}` === config.kill) {
    print({ type: "killing", point, index: points });
    process.kill(process.pid, "SIGKILL");
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_000);
  }
}

/** The real store, with kill points around every write. */
function killingStore(store: SqliteStore): ExecutionStore {
  const around =
    <A extends { type?: string }, R>(name: string, write: (argument: A) => Promise<R>) =>
    (argument: A): Promise<R> => {
      const type = argument.type ?? name;
      reach(`before:${type}`);
      return write(argument).then((result) => {
        reach(`after:${type}`);
        return result;
      });
    };
  const wrapped: Record<string, unknown> = {
    run: around("run", (operation) => store.run(operation as never)),
    enqueueMessage: around("enqueueMessage", (operation) => store.enqueueMessage(operation as never)),
    cancelQueued: around("cancelQueued", (operation) => store.cancelQueued(operation as never)),
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (typeof property === "string" && property in wrapped) return wrapped[property];
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
}

async function main(): Promise<void> {
  const store = await SqliteStore.open(config.store);
  const environment = await Phronomy.open({ store: killingStore(store), logger: { warn: (message) => writeSync(2, `${message}\n`) } });
  const agent = environment.agent({
    id: QUEUE_AGENT_ID,
    model: crashModel(2),
    onBusy: "enqueue",
    instructions: "You help customers with their orders.",
    tools: { lookup: idempotentLookup(config.files, { afterEffect: () => reach("tool:") }) },
  });
  const runs = Array.from({ length: config.messages }, (_, index) => ({ input: messageInput(index), run: agent.start(messageInput(index)) }));
  await Promise.all(
    runs.map(async ({ input, run }) => {
      const executionId = await run.executionId;
      print({ type: "accepted", executionId, input });
      const result = await run.result;
      print({ type: "settled", executionId, output: result.output });
    }),
  );
  print({ type: "done", points });
  await environment.close();
}

setInterval(() => undefined, 1 << 30);

main().then(
  () => process.exit(0),
  (error: unknown) => {
    writeSync(2, `queue crash child failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(3);
  },
);
