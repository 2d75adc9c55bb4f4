// Ownership across real processes (issue 7, docs/decisions/0010; by
// partitions since issue 13, docs/decisions/0030): each test runs
// coordinator processes (fixtures/coordinator.ts) on one schema of the real
// PostgreSQL, with 1 s leases, and judges by what the database holds. The
// full-size test (three processes, 300 runs, one killed and one stopped
// past its lease at random moments) prints its seed: LEASES_SEED=<seed>
// replays its choices.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { partitionOf } from "../../host/store/postgres/partitions.js";
import { atEnd, postgresUrl, withClient } from "./database.js";
import type { CoordinatorConfig } from "./fixtures/coordinator.js";
import { coordinatorForTest, is, type Coordinator } from "./fixtures/processes.js";
import { dumpOnFailure, freshSpreadSchema, namedCoordinators, seededDisruption } from "./fixtures/spread.js";
import { installWriteLedger, readLeaseHistory, readWrites, writesAfterTakeover, writesOutsideLease } from "./fixtures/write-ledger.js";

const leaseMs = 1_000;

/** The full-size test (issue 7): this many coordinator processes, agents
 * spread round-robin over them, runs per agent one after another. */
const processCount = 3;
const agentCount = 30;
const runsPerAgent = 10;
/** Each lookup takes this long, so a kill often lands inside a tool call. */
const toolDelayMs = 20;
/** The victim is killed after between these many completed runs (of 300):
 * never before every process has work in flight, never after the end. */
const killAfterMin = 30;
const killAfterMax = 240;
/** How long the stopped process stays stopped: past its lease. */
const stoppedMs = 2.5 * leaseMs;
/** The driver's wait while an agent has no live owner or refuses a start. */
const retryMs = 100;

interface Setup {
  readonly schema: string;
  readonly config: (agents: readonly string[], gate?: string, recover?: boolean) => CoordinatorConfig;
  readonly url: string;
  readonly directory: string;
}

/** `partitions`: the schema's partition count. The two-process tests use
 * one, so the one agent's partition stays with its owner while it lives
 * (with more, the owner gives half of them to the joiner). */
async function setUp(partitions?: number): Promise<Setup> {
  const { schema, url } = await freshSpreadSchema(leaseMs, partitions);
  const directory = await mkdtemp(join(tmpdir(), "phronomy-leases-"));
  atEnd(() => rm(directory, { recursive: true, force: true }));
  return {
    schema,
    directory,
    url,
    config: (agents, gate, recover) => ({
      url,
      databaseUrl: postgresUrl,
      schema,
      agents,
      ...(gate !== undefined ? { gate } : {}),
      ...(recover === false ? { recover } : {}),
    }),
  };
}

const coordinator = coordinatorForTest;

/** The tests' own reads share a few connections: the full-size test's
 * driver asks about 30 agents at once, and the server's `max_connections`
 * is shared with the coordinators (≈ 15 each) and whatever else runs. */
const readConnectionsMax = 4;
let readPool: pg.Pool | undefined;
afterAll(async () => {
  await readPool?.end();
});

async function query<T extends Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> {
  readPool ??= new pg.Pool({ connectionString: postgresUrl, max: readConnectionsMax });
  return (await readPool.query<T>(sql, values)).rows;
}

describe("agent leases across processes (PostgreSQL)", () => {
  it("a second process is refused while the owner lives; after kill -9 it takes over at a new epoch and finishes the dead owner's execution, each tool effect once per key", async () => {
    const { schema, config, directory } = await setUp(1);
    const first = coordinator("first", config(["support"], join(directory, "never-opens")));
    const firstReady = await first.waitFor(is("ready"));
    expect(firstReady.leases).toEqual([{ agentId: "support", acquired: true, owner: firstReady.owner, epoch: 1 }]);
    first.send({ start: "support", tag: "first" });
    const admitted = await first.waitFor(is("admitted"));
    await first.waitFor(is("tool"));

    const second = coordinator("second", config(["support"]));
    const secondReady = await second.waitFor(is("ready"));
    expect(secondReady.leases).toEqual([{ agentId: "support", acquired: false, owner: "", epoch: 0 }]);
    // A start sent to it is filed for the owner (docs/decisions/0031), which
    // refuses it: its one conversation is busy.
    second.send({ start: "support", tag: "refused" });
    const refused = await second.waitFor((line) => line.type === "error" && line.tag === "refused");
    expect(refused).toMatchObject({ code: "AGENT_BUSY" });
    // One that cannot be filed (its signal stays here) is refused here, naming the owner.
    second.send({ start: "support", tag: "not-filed", local: true });
    const notFiled = await second.waitFor((line) => line.type === "error" && line.tag === "not-filed");
    expect(notFiled).toMatchObject({ code: "INVALID_INPUT", reason: "not_transferable" });

    // The owner is still alive a few lease lengths on: no takeover.
    await new Promise((resolve) => setTimeout(resolve, 2.5 * leaseMs));
    expect(second.lines.some((line) => line.type === "takeover")).toBe(false);

    const killedAt = Date.now();
    first.kill("SIGKILL");
    await first.exited;
    const takeover = await second.waitFor(is("takeover"), 10 * leaseMs);
    const takeoverMs = takeover.receivedAt - killedAt;
    console.log(`takeover ${takeoverMs} ms after kill -9 (lease ${leaseMs} ms)`);
    expect(takeover.epoch).toBe(2);
    expect(takeoverMs).toBeLessThan(5 * leaseMs);

    // The dead owner's execution is recovered and completes in the second process.
    const row = await waitForRow(schema, admitted.executionId, (found) => found.status === "terminal").catch((error: Error) => {
      throw new Error(`${error.message}; second: ${JSON.stringify(second.lines)} ${second.stderr.join("")}`);
    });
    expect(row).toMatchObject({ status: "terminal", outcome: "completed" });
    const leases = await query(`SELECT owner, epoch FROM ${schema}.partitions WHERE partition = ${schema}.partition_of('support')`);
    expect(leases).toEqual([{ owner: secondReady.owner, epoch: "2" }]);
    const effects = await query<{ key: string; attempts: number }>(`SELECT key, attempts FROM ${schema}.effects ORDER BY key`);
    expect(effects.map((effect) => effect.key)).toEqual([`${admitted.executionId}:call-0-0`, `${admitted.executionId}:call-1-0`]);

    // New starts are admitted in the new owner.
    second.send({ start: "support", tag: "after" });
    const after = await second.waitFor((line) => (line.type === "result" || line.type === "error") && line.tag === "after");
    expect(after).toMatchObject({ type: "result", outcome: "completed" });
  }, 60_000);

  it("a former owner paused (SIGSTOP) past its lease, then continued: its late barrier write is refused by the fencing check", async () => {
    const { schema, config, directory } = await setUp(1);
    const gateA = join(directory, "gate-a");
    const gateB = join(directory, "gate-b");
    const first = coordinator("first", config(["support"], gateA));
    await first.waitFor(is("ready"));
    first.send({ start: "support", tag: "paused" });
    const { executionId } = await first.waitFor(is("admitted"));
    await first.waitFor(is("tool"));
    // The new owner recovers only when told (recover: false), so the row
    // stays where the former owner left it: revision 3, its next barrier's
    // expected revision. Only the fencing check stands in the way.
    const second = coordinator("second", config(["support"], gateB, false));
    await second.waitFor(is("ready"));

    first.kill("SIGSTOP");
    const takeover = await second.waitFor(is("takeover"), 10 * leaseMs);
    expect(takeover.epoch).toBe(2);
    const before = await snapshot(schema, executionId);
    expect(before.row).toMatchObject({ status: "active", phase: "dispatching_tools", revision: "3" });

    // The former owner wakes up inside its tool call, which now returns:
    // its next barrier (expected revision 3, lease epoch 1) is refused.
    await writeFile(gateA, "");
    first.kill("SIGCONT");
    const late = await first.waitFor((line) => line.type === "error" && line.tag === "paused", 10 * leaseMs);
    expect(late).toMatchObject({ code: "EXECUTION_REHYDRATION_REQUIRED" });
    expect((late as { message: string }).message).toMatch(
      /providerBarrier of execution \S+ was refused by the fencing check: this process \(\S+\) no longer holds agent "support" at lease epoch 1/,
    );
    const afterLate = await snapshot(schema, executionId);
    expect(afterLate).toEqual(before);
    // Nor may the former owner admit anything any more.
    // (a start that cannot be filed for the new owner, docs/decisions/0031:
    // refused as not transferable once its tick saw the partition lost,
    // AGENT_BUSY before — the fenced execution holds the agent).
    first.send({ start: "support", tag: "late-start", local: true });
    const lateStart = (await first.waitFor((line) => line.type === "error" && line.tag === "late-start")) as unknown as { code: string; reason?: string };
    expect(lateStart.code === "AGENT_BUSY" || (lateStart.code === "INVALID_INPUT" && lateStart.reason === "not_transferable"), JSON.stringify(lateStart)).toBe(
      true,
    );
    expect(await query(`SELECT count(*)::int AS count FROM ${schema}.executions`)).toEqual([{ count: 1 }]);

    // The new owner recovers it: the recorded batch again, same key.
    second.send({ recover: true });
    const redispatched = await second.waitFor(is("tool"));
    expect(redispatched.key).toBe(`${executionId}:call-0-0`);
    await writeFile(gateB, "");
    const row = await waitForRow(schema, executionId, (found) => found.status === "terminal");
    expect(row).toMatchObject({ outcome: "completed" });
    expect(await query(`SELECT epoch FROM ${schema}.partitions WHERE partition = ${schema}.partition_of('support')`)).toEqual([{ epoch: "2" }]);
    const effects = await query<{ key: string }>(`SELECT key FROM ${schema}.effects ORDER BY key`);
    expect(effects.map((effect) => effect.key)).toEqual([`${executionId}:call-0-0`, `${executionId}:call-1-0`]);
  }, 60_000);

  // Its failures are read from the file its processes' lines go to
  // (below) and the schema PHRONOMY_TEST_KEEP_SCHEMAS=1 keeps
  // (docs/decisions/0055: the causes found that way).
  it(`three coordinators, ${agentCount * runsPerAgent} runs over ${agentCount} agents, one killed (kill -9) and one stopped (SIGSTOP) past its lease at random moments: every run completes exactly once, one effect per idempotency key, no write of the dead process's epoch after the takeover`, {
    timeout: 120_000,
  }, async () => {
    const { replay, victimIndex, killAfter, killDelayMs, sleeperIndex, stopAfter } = seededDisruption("LEASES_SEED", {
      processCount,
      runsMin: killAfterMin,
      runsMax: killAfterMax,
      killDelayMaxMs: 3 * toolDelayMs,
    });
    console.log(
      `three coordinators: ${replay} kills p${victimIndex} ${killDelayMs} ms after ${killAfter} completed runs, stops p${sleeperIndex} (SIGSTOP) for ${stoppedMs} ms after ${stopAfter} (the seed replays these choices; the timing around them varies)`,
    );

    const { schema, config, url } = await setUp();
    await withClient((client) => installWriteLedger(client, schema));
    const agentIds = Array.from({ length: agentCount }, (_, index) => `agent-${index}`);
    // Each process's connections carry its name, so the ledger can tell its writes apart.
    const processes = namedCoordinators(processCount, url, (index) => ({
      ...config(agentIds.filter((_, agent) => agent % processCount === index)),
      toolDelayMs,
    }));
    const names = processes.map((process) => process.name);
    dumpOnFailure("leases", replay, schema, processes);
    const ready = await Promise.all(processes.map((process) => process.waitFor(is("ready"))));
    // Every process stands by for every other agent (refused while its owner lives).
    for (const process of processes) process.send({ define: agentIds });
    await Promise.all(processes.map((process) => process.waitFor(is("defined"))));
    // The first process to open takes every partition; the others get
    // theirs as it gives surplus ones up, a few per tick. The runs start
    // once every process holds some of the agents' partitions, so each has
    // work in flight when one is killed or stopped.
    const agentPartitions = [...new Set(agentIds.map((agentId) => partitionOf(agentId, 256)))];
    const balancedBy = Date.now() + 30_000;
    for (;;) {
      const holders = await query<{ owner: string }>(
        `SELECT DISTINCT owner FROM ${schema}.partitions WHERE partition = ANY($1::int[]) AND expires_at > clock_timestamp()`,
        [agentPartitions],
      );
      if (ready.every((line) => holders.some((holder) => holder.owner === line.owner))) break;
      if (Date.now() > balancedBy)
        throw new Error(`${replay}: the agents' partitions did not spread over the ${processCount} processes within 30 s: held by ${JSON.stringify(holders)}`);
      await sleep(retryMs);
    }
    const byOwner = new Map(ready.map((line, index) => [line.owner, processes[index]!]));
    const ownerNameOf = new Map(ready.map((line, index) => [names[index]!, line.owner]));
    const ownerOf = async (agentId: string): Promise<Coordinator | undefined> => {
      const [lease] = await query<{ owner: string }>(
        `SELECT owner FROM ${schema}.partitions WHERE partition = ${schema}.partition_of($1) AND expires_at > clock_timestamp()`,
        [agentId],
      );
      const process = lease === undefined ? undefined : byOwner.get(lease.owner);
      return process?.alive === true ? process : undefined;
    };
    // Each run's input is its tag, so the store says whether a start was admitted.
    const admitted = async (tag: string): Promise<boolean> =>
      (await query(`SELECT 1 FROM ${schema}.executions WHERE input = $1`, [JSON.stringify(tag)])).length > 0;

    const victim = processes[victimIndex]!;
    const victimOwner = ready[victimIndex]!.owner;
    const sleeper = processes[sleeperIndex]!;
    const stopLater = async (): Promise<void> => {
      sleeper.kill("SIGSTOP");
      await sleep(stoppedMs);
      sleeper.kill("SIGCONT");
    };
    let killedAt = 0;
    let completed = 0;
    let lostWithVictim = 0;
    let startedAgain = 0;
    const killLater = async (): Promise<void> => {
      await sleep(killDelayMs);
      killedAt = Date.now();
      victim.kill("SIGKILL");
    };
    const drive = async (agentId: string): Promise<void> => {
      for (let run = 0; run < runsPerAgent; ) {
        const tag = `${agentId}/run-${run}`;
        const owner = await ownerOf(agentId);
        if (owner === undefined) {
          await sleep(retryMs); // its owner died and the lease has not been taken over yet
          continue;
        }
        const from = owner.lines.length;
        // Keyed by its tag: a start the process filed for another holder
        // just before dying (its partition moved meanwhile) and sent again
        // runs once (docs/decisions/0031).
        owner.send({ start: agentId, input: tag, tag, key: tag });
        const line = await Promise.race([
          owner.waitFor((candidate) => (candidate.type === "result" || candidate.type === "error") && candidate.tag === tag, 30_000, from),
          owner.exited.then(() => undefined),
        ]);
        if (line?.type === "result") {
          expect(line.outcome, replay).toBe("completed");
          run += 1;
          completed += 1;
          if (completed === killAfter) void killLater();
          if (completed === stopAfter) void stopLater();
          continue;
        }
        if (line === undefined) {
          // Once another process holds the lease, every transaction of the
          // dead one has ended: the store knows whether the start was admitted.
          // Starts sent to the new owner right away wait for (or are refused
          // during) its recovery of the dead owner's executions.
          while ((await ownerOf(agentId)) === undefined) await sleep(retryMs);
        }
        // Admitted (then the store finishes it: the new owner recovers it),
        // or refused (AGENT_BUSY: not the owner, or its recovery still runs): start it again.
        if (await admitted(tag)) {
          if (line === undefined) lostWithVictim += 1;
          run += 1;
        } else {
          if (line === undefined) startedAgain += 1;
          await sleep(retryMs);
        }
      }
    };
    await Promise.all(agentIds.map(drive));
    expect(victim.alive, replay).toBe(false);

    // Every run admitted once, by whichever process, and completed.
    const until = Date.now() + 20_000;
    const readExecutions = () =>
      query<{ execution_id: string; agent_id: string; input: string; status: string; outcome: string | null }>(
        `SELECT execution_id, agent_id, input, status, outcome FROM ${schema}.executions`,
      );
    let rows = await readExecutions();
    while (rows.some((row) => row.status !== "terminal") && Date.now() < until) {
      await sleep(100);
      rows = await readExecutions();
    }
    const tags = agentIds.flatMap((agentId) => Array.from({ length: runsPerAgent }, (_, run) => `${agentId}/run-${run}`));
    expect(rows.map((row) => JSON.parse(row.input) as string).sort(), replay).toEqual(tags.sort());
    expect(
      rows.filter((row) => row.status !== "terminal" || row.outcome !== "completed"),
      replay,
    ).toEqual([]);
    const terminals = await query<{ execution_id: string; count: number }>(
      `SELECT execution_id, count(*)::int AS count FROM ${schema}.steps WHERE kind = 'terminal' GROUP BY execution_id`,
    );
    expect(terminals.length, replay).toBe(rows.length);
    expect(
      terminals.filter((terminal) => terminal.count !== 1),
      replay,
    ).toEqual([]);

    // The partition grants: the dead process's partitions moved to a live
    // process at a new epoch.
    const history = await withClient((client) => readLeaseHistory(client, schema));
    const victimPartitions = [...new Set(history.filter((grant) => grant.owner === victimOwner).map((grant) => grant.partition))];
    expect(victimPartitions.length, replay).toBeGreaterThan(0);
    const takeoverOf = (partition: number, epoch: number) => history.find((grant) => grant.partition === partition && grant.epoch > epoch);
    const leases = await query<{ partition: number; owner: string; epoch: string }>(`SELECT partition, owner, epoch FROM ${schema}.partitions`);
    for (const partition of victimPartitions) {
      const lease = leases.find((row) => row.partition === partition);
      expect(lease?.owner, replay).not.toBe(victimOwner);
      expect(Number(lease?.epoch), replay).toBeGreaterThanOrEqual(2);
    }
    // Partitions move between live processes too: the stopped one loses
    // its partitions, and live processes give surplus ones up to balance
    // (idle ones first; the victim too, while it lived). A live process
    // starved of CPU past its lease (a loaded machine) may lose a partition
    // and take it back itself at the next epoch.
    const movedBetweenLive = new Set(
      history
        .filter((grant, index) => {
          const previous = history.slice(0, index).findLast((earlier) => earlier.partition === grant.partition);
          return previous !== undefined && (previous.owner !== victimOwner || grant.at < killedAt);
        })
        .map((grant) => grant.partition),
    );

    // One effect row per idempotency key, two keys per execution, none of an
    // execution the store lacks. A key is called again only when the
    // process that called it died or lost the partition before its result
    // was recorded: no process calls a key twice under one grant of its
    // partition. (Who called first is told by the processes' own `tool`
    // lines, printed before the call: the effect rows' order is the order
    // their inserts committed, which a loaded process may reverse.)
    const effects = await query<{ key: string; attempts: number }>(`SELECT key, attempts FROM ${schema}.effects ORDER BY key`);
    const executionOfKey = (key: string) => key.slice(0, key.lastIndexOf(":"));
    const keysPerExecution = new Map<string, number>();
    for (const { key } of effects) keysPerExecution.set(executionOfKey(key), (keysPerExecution.get(executionOfKey(key)) ?? 0) + 1);
    expect([...keysPerExecution.keys()].sort(), replay).toEqual(rows.map((row) => row.execution_id).sort());
    expect(
      [...keysPerExecution.values()].filter((count) => count !== 2),
      replay,
    ).toEqual([]);
    const agentOfExecution = new Map(rows.map((row) => [row.execution_id, row.agent_id]));
    const repeated = effects.filter((effect) => effect.attempts > 1);
    const unexplained = repeated.flatMap((effect) => {
      const partition = partitionOf(agentOfExecution.get(executionOfKey(effect.key))!, 256);
      return processes.flatMap((process, index) => {
        const calls = process.lines.filter((line) => line.type === "tool" && line.key === effect.key).length;
        const grants = history.filter((grant) => grant.partition === partition && grant.owner === ready[index]!.owner).length;
        return calls > grants ? [{ key: effect.key, process: process.name, calls, grants, partition }] : [];
      });
    });
    expect(unexplained, replay).toEqual([]);

    // No write of the dead process committed after its partitions were taken
    // over, none of the stopped one after it lost them, and none of any
    // process after a takeover of its partition: each write's own commit saw
    // its process holding the partition, and no grant of a later epoch was
    // recorded before it (the partition fence lock, docs/decisions/0042).
    const writes = await withClient((client) => readWrites(client, schema));
    const victimWrites = writes.filter((write) => write.writer === victim.name);
    expect(victimWrites.length, replay).toBeGreaterThan(0);
    expect(writesOutsideLease(writes, victim.name, victimOwner), replay).toEqual([]);
    expect(writesOutsideLease(writes, sleeper.name, ready[sleeperIndex]!.owner), replay).toEqual([]);
    const outside = names
      .filter((name) => name !== victim.name && name !== sleeper.name)
      .flatMap((name) => writesOutsideLease(writes, name, ownerNameOf.get(name)!));
    expect(outside, replay).toEqual([]);
    expect(writesAfterTakeover(writes, history), replay).toEqual([]);

    const lastVictimWrite = Math.max(...victimWrites.map((write) => write.at));
    const takeovers = victimPartitions.map(
      (partition) => takeoverOf(partition, history.findLast((grant) => grant.partition === partition && grant.owner === victimOwner)!.epoch)!.at - killedAt,
    );
    console.log(
      [
        `three coordinators (${replay}): p${victimIndex} killed after ${killAfter} completed runs; ${rows.length} executions, all completed once;`,
        `${lostWithVictim} admitted by the dead process and finished by its successors, ${startedAgain} starts lost with it and sent again;`,
        `its ${victimPartitions.length} partitions taken over ${Math.min(...takeovers)}–${Math.max(...takeovers)} ms after the kill (lease ${leaseMs} ms);`,
        `its ${victimWrites.length} writes all committed under its lease, the last ${killedAt - lastVictimWrite} ms before the kill;`,
        `${repeated.length} keys called more than once (the call's result not recorded when its process died), ${movedBetweenLive.size} partitions moved between live processes`,
      ].join("\n  "),
    );
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function snapshot(schema: string, executionId: string) {
  const [row] = await query(`SELECT status, phase, revision, updated_at FROM ${schema}.executions WHERE execution_id = $1`, [executionId]);
  const steps = await query(`SELECT seq, kind FROM ${schema}.steps WHERE execution_id = $1 ORDER BY seq`, [executionId]);
  const agent = await query(`SELECT revision FROM ${schema}.agents`);
  return { row, steps, agent };
}

async function waitForRow(
  schema: string,
  executionId: string,
  done: (row: Record<string, unknown>) => boolean,
  timeoutMs = 20_000,
): Promise<Record<string, unknown>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await query(`SELECT status, outcome, revision FROM ${schema}.executions WHERE execution_id = $1`, [executionId]);
    if (row !== undefined && done(row)) return row;
    if (Date.now() > until) throw new Error(`execution ${executionId} did not reach the expected state: ${JSON.stringify(row)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
