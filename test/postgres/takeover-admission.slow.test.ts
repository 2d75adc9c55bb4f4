// A takeover's recovery comes before new starts (docs/decisions/0010): when
// a process takes an agent over, the executions it recovers take the
// agent's admission before any start asked for meanwhile — which waits:
// the core is told of the takeover before any start is judged, and
// answers wait while the conversation recovers (docs/decisions/0062) — so
// no recovered execution is left unfinished behind a new one. Starts asked for before
// the takeover are filed for the partition's holder (docs/decisions/0031)
// and run by the successor through the same path, after its recovery.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import type { PhronomyError } from "../../host/errors.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { agentRunModel, lookupTool, recordingLogger, type RecordedCall } from "../runtime/helpers.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";
import { coordinatorForTest, is } from "./fixtures/processes.js";

// Long enough that a loaded machine never lets a live process's lease
// lapse (ticks every second); expiry is driven by the tests themselves,
// writing it into the partition rows (`expire`, `holdElsewhere`), not
// raced against the clock.
const leaseMs = 3_000;

/** Expires what a dead process held, as its lease would once run out: its
 * partitions and its membership (so the survivor's share is every one). */
async function expireOwner(schema: string, owner: string): Promise<void> {
  await withClient(async (client) => {
    await client.query(`UPDATE ${schema}.partitions SET expires_at = clock_timestamp() WHERE owner = $1`, [owner]);
    await client.query(`UPDATE ${schema}.partition_members SET expires_at = clock_timestamp() WHERE instance_id = $1`, [owner]);
  });
}

/** Another owner takes the agent's partition (a later epoch), held until
 * `expirePartition` gives it up: this process's renewal fails at its next tick. */
async function holdElsewhere(schema: string, agentId: string): Promise<void> {
  await withClient((client) =>
    client.query(
      `UPDATE ${schema}.partitions SET owner = 'elsewhere', epoch = epoch + 1, expires_at = clock_timestamp() + interval '1 hour' WHERE partition = ${schema}.partition_of($1)`,
      [agentId],
    ),
  );
}

/** The other owner's lease on the agent's partition runs out now. */
async function expirePartition(schema: string, agentId: string): Promise<void> {
  await withClient((client) =>
    client.query(`UPDATE ${schema}.partitions SET expires_at = clock_timestamp() WHERE owner = 'elsewhere' AND partition = ${schema}.partition_of($1)`, [
      agentId,
    ]),
  );
}

async function openOn(url: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger() });
  atEnd(() => environment.close());
  return environment;
}

/** An environment on a fresh schema whose agent "support" runs an
 * execution now inside its first tool call, held there until `release`. */
async function startedInsideTool() {
  const schema = freshSchema();
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const calls: RecordedCall[] = [];
  const env = await openOn(`${postgresUrl}?schema=${schema}&lease_ms=${leaseMs}`);
  const agent = env.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls, gate }) } });
  const run = agent.start("Where is order 42?");
  run.result.catch(() => undefined);
  const executionId = await run.executionId;
  while (calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  return { schema, env, agent, run, executionId, calls, release };
}

describe("takeover on PostgreSQL", () => {
  it("starts asked for while the new owner recovers the agent wait for the recovery: the recovered execution completes first", async () => {
    const schema = freshSchema();
    const url = `${postgresUrl}?schema=${schema}&lease_ms=${leaseMs}`;
    const directory = await mkdtemp(join(tmpdir(), "phronomy-takeover-"));
    atEnd(() => rm(directory, { recursive: true, force: true }));
    await (await PostgresStore.open(url)).close();
    await withClient((client) => client.query(`CREATE TABLE ${schema}.effects (key text PRIMARY KEY, first_pid integer NOT NULL, attempts integer NOT NULL)`));
    // The former owner: its tool waits for a file that never appears; it is killed there.
    const former = coordinatorForTest("former", { url, databaseUrl: postgresUrl, schema, agents: ["support"], gate: join(directory, "never") });
    const formerOwner = (await former.waitFor(is("ready"))).owner;
    former.send({ start: "support", input: "Where is order 42?", tag: "stranded" });
    const strandedId = (await former.waitFor(is("admitted"))).executionId;
    await former.waitFor(is("tool"));

    const calls: RecordedCall[] = [];
    const successor = await openOn(url);
    const agent = successor.agent({ id: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls }) } });
    await successor.recovery("support");
    former.kill("SIGKILL");
    await former.exited;
    // Its lease runs out (written, not waited for): the successor's next tick takes the partition.
    await expireOwner(schema, formerOwner);

    // Starts keep coming, one every millisecond, while the successor takes
    // the agent over, until one is admitted. Before the takeover they are
    // filed for the partition's holder (docs/decisions/0031) — the dead
    // former owner, so they wait for whoever takes the partition: the
    // successor, which runs them after its recovery.
    const refusals: string[] = [];
    const messages: string[] = [];
    const runs: { executionId: Promise<string>; result: Promise<unknown> }[] = [];
    const admittedAny = async (): Promise<boolean> =>
      (await withClient((client) => client.query(`SELECT 1 FROM ${schema}.executions WHERE execution_id <> $1`, [strandedId]))).rowCount! > 0;
    await new Promise<void>((resolve) => {
      const deadline = Date.now() + 60_000;
      let checking = false;
      const timer = setInterval(() => {
        if (Date.now() > deadline) {
          clearInterval(timer);
          resolve();
          return;
        }
        const run = agent.start("And order 43?");
        run.result.catch((error: PhronomyError) => {
          refusals.push(String(error.details?.["reason"] ?? error.code));
          messages.push(`${error.code} ${error.message} ${JSON.stringify(error.details)}`);
        });
        runs.push(run);
        if (checking) return;
        checking = true;
        void admittedAny().then(
          (admitted) => {
            checking = false;
            if (!admitted) return;
            clearInterval(timer);
            resolve();
          },
          () => {
            checking = false;
          },
        );
      }, 1);
    });
    await Promise.allSettled(runs.map((run) => run.result));
    const completed = (
      await Promise.all(
        runs.map((run) =>
          run.result.then(
            () => run.executionId,
            () => undefined,
          ),
        ),
      )
    ).filter((id) => id !== undefined);

    // Refused only as busy (the recovered execution, or another start,
    // holds the agent's admission): never for the takeover itself.
    const unexpected = refusals.flatMap((reason, index) => (["AGENT_BUSY", "CAPACITY"].includes(reason) ? [] : [messages[index]!]));
    expect(unexpected.slice(0, 5), `${unexpected.length} unexpected refusals`).toEqual([]);
    // Nothing left unfinished (an execution fenced that way is recovered
    // when the successor takes its partition back).
    const readRows = async () =>
      (
        await withClient((client) =>
          client.query<{ execution_id: string; status: string; outcome: string; updated_at: string }>(
            `SELECT execution_id, status, outcome, updated_at FROM ${schema}.executions ORDER BY created_at`,
          ),
        )
      ).rows;
    let rows = await readRows();
    for (const until = Date.now() + 60_000; rows.some((row) => row.status !== "terminal") && Date.now() < until; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      rows = await readRows();
    }
    expect(rows.filter((row) => row.status !== "terminal")).toEqual([]);
    const recovered = rows.find((row) => row.execution_id === strandedId)!;
    expect(recovered.outcome).toBe("completed");
    expect(rows.filter((row) => row.execution_id !== strandedId).map((row) => row.outcome)).toEqual(completed.map(() => "completed"));
    // One admission at a time: the recovered execution ended before any new one was admitted.
    for (const executionId of completed) {
      const admittedAt = (await successor.store.listSteps(executionId))[0]!.at;
      expect(Number(recovered.updated_at)).toBeLessThanOrEqual(admittedAt);
    }
    expect(completed.length, `no start completed; refusals: ${[...new Set(refusals)].join(", ")}`).toBeGreaterThan(0);
    expect(calls.some((call) => call.idempotencyKey.startsWith(`${strandedId}:`))).toBe(true);
  }, 180_000);
});

describe("a lease lost and taken back by the same process", () => {
  it("executions refused by fencing while it was lost are released and recovered from their rows when it is taken back", async () => {
    const { schema, env, run, executionId, calls, release } = await startedInsideTool();

    // Another owner holds the agent for a moment (a partition, say): this
    // process's renewal fails, and the write after the tool is fenced.
    await holdElsewhere(schema, "support");
    while ((env.store as PostgresStore).leaseOf("support") !== undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    await expect(run.result).rejects.toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED" });
    expect((await env.executions({ status: "recovery_required" })).map((row) => row.executionId)).toEqual([executionId]);

    // That lease expires; this process takes the agent back (a new epoch)
    // and recovers the execution it held for recovery.
    await expirePartition(schema, "support");
    const deadline = Date.now() + 60_000;
    while ((await env.execution(executionId))?.status !== "terminal" && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
    expect(await env.executions({ status: "recovery_required" })).toEqual([]);
    expect(await env.recovery("support")).toEqual([expect.objectContaining({ executionId, status: "continued" })]);
    // The tool batch was re-dispatched with its recorded call ids: same keys.
    expect(new Set(calls.map((call) => call.idempotencyKey)).size).toBe(2);
  }, 120_000);
  it("a partition lost and taken back while a tool runs: the write after the tool carries the new epoch and the execution completes", async () => {
    const { schema, env, agent, run, release } = await startedInsideTool();
    const store = env.store as PostgresStore;
    const epoch = store.leaseOf("support")!.epoch;

    // Another owner holds the partition for a moment, and this process
    // takes it back (a later epoch) while the tool still runs: the
    // takeover's recovery finds the execution running, not held.
    await holdElsewhere(schema, "support");
    while (store.leaseOf("support") !== undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    await expirePartition(schema, "support");
    const deadline = Date.now() + 60_000;
    while (store.leaseOf("support") === undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(store.leaseOf("support")?.epoch).toBe(epoch + 2);

    // Its write after the tool is fenced by the epoch held now: it commits.
    release();
    expect(await run.result).toMatchObject({ outcome: "completed" });
    expect(await env.executions({ status: "recovery_required" })).toEqual([]);
    const next = await agent.start("And order 43?").result;
    expect(next.outcome).toBe("completed");
  }, 120_000);
  it("taken back while a tool runs, its recovery's read answered only after the execution ended: the row read is not installed again, and the next start is admitted", async () => {
    const { schema, env, agent, run, executionId, calls, release } = await startedInsideTool();
    const store = env.store as PostgresStore;
    const epoch = store.leaseOf("support")!.epoch;
    // The takeover's read of the unfinished rows sees the execution running
    // (inside its tool), and answers once it has ended here: a loaded
    // machine orders the two connections' answers so.
    const read = store.unfinishedExecutions.bind(store);
    const ended = run.result.then(
      () => undefined,
      () => undefined,
    );
    let reads = 0;
    store.unfinishedExecutions = async () => {
      const rows = await read();
      reads += 1;
      await ended;
      return rows;
    };

    await holdElsewhere(schema, "support");
    while (store.leaseOf("support") !== undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    await expirePartition(schema, "support");
    const deadline = Date.now() + 60_000;
    while (store.leaseOf("support") === undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(store.leaseOf("support")?.epoch).toBe(epoch + 2);
    while (reads === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(reads).toBeGreaterThan(0);

    release();
    expect(await run.result).toMatchObject({ outcome: "completed" });
    const next = await agent.start("And order 43?").result;
    expect(next.outcome).toBe("completed");
    expect(await env.execution(executionId)).toMatchObject({ status: "terminal", outcome: "completed" });
    expect(await env.executions({ status: "recovery_required" })).toEqual([]);
    // Each of its tool calls ran once (its two turns): it was not
    // recovered from the stale row, which re-dispatches the first.
    expect(calls.filter((call) => call.idempotencyKey.startsWith(`${executionId}:`)).map((call) => call.orderId)).toEqual(["42", "43"]);
    expect(await env.recovery("support")).toEqual([]);
  }, 120_000);
});
