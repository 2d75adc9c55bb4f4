// Starts sent to random processes (issue 13 step 3, docs/decisions/0031):
// three coordinator processes (fixtures/coordinator.ts) on one schema of the
// real PostgreSQL with 1 s leases and 256 partitions; every start goes to a
// random live process — rarely the one holding its conversation's
// partition — with an idempotency key, and is sent again (same key) to
// another when its sender dies or it is refused. One process is killed
// (kill -9) and one stopped (SIGSTOP) past its lease at random moments.
// Every key must run once, complete, and leave one effect per tool key.
// The seed is printed: START_ANY_SEED=<seed> replays the choices.

import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { atEnd, postgresUrl } from "./database.js";
import { is, type Coordinator } from "./fixtures/processes.js";
import { dumpOnFailure, freshSpreadSchema, namedCoordinators, seededDisruption } from "./fixtures/spread.js";
import { startExecutionIdOf } from "../../host/store/start-filing.js";

const leaseMs = 1_000;
const processCount = 3;
const agentCount = 24;
const runsPerAgent = 6;
const toolDelayMs = 20;
const disruptAfterMin = 20;
const disruptAfterMax = 110;
const stoppedMs = 2.5 * leaseMs;
const retryMs = 100;

let readPool: pg.Pool | undefined;
afterAll(async () => {
  await readPool?.end();
});

async function query<T extends Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> {
  readPool ??= new pg.Pool({ connectionString: postgresUrl, max: 4 });
  return (await readPool.query<T>(sql, values)).rows;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("starts sent to random processes (PostgreSQL)", () => {
  it(`three coordinators, ${agentCount * runsPerAgent} keyed starts each sent to a random process, one killed (kill -9) and one stopped past its lease: every key runs once and completes, one effect per tool key`, async () => {
    const { random, replay, victimIndex, killAfter, sleeperIndex, stopAfter } = seededDisruption("START_ANY_SEED", {
      processCount,
      runsMin: disruptAfterMin,
      runsMax: disruptAfterMax,
      killDelayMaxMs: 0,
    });
    console.log(
      `starts at random processes: ${replay} kills p${victimIndex} after ${killAfter} completed runs, stops p${sleeperIndex} for ${stoppedMs} ms after ${stopAfter}`,
    );

    const { schema, url } = await freshSpreadSchema(leaseMs);
    const agentIds = Array.from({ length: agentCount }, (_, index) => `agent-${index}`);
    const processes = namedCoordinators(processCount, url, (index) => ({
      databaseUrl: postgresUrl,
      schema,
      agents: [],
      toolDelayMs,
      onBusy: "enqueue",
      instanceId: `p${index}`,
    }));
    dumpOnFailure("start-any", replay, schema, processes);
    // (A loaded machine starts three node processes slowly.)
    await Promise.all(processes.map((process) => process.waitFor(is("ready"), 90_000)));
    for (const process of processes) process.send({ define: agentIds });
    await Promise.all(processes.map((process) => process.waitFor(is("defined"), 60_000)));
    atEnd(async () => {
      for (const process of processes) if (process.alive) process.kill("SIGKILL");
    });

    const victim = processes[victimIndex]!;
    const sleeper = processes[sleeperIndex]!;
    let completed = 0;
    let sentAgain = 0;
    let sentToOwner = 0;
    let sent = 0;
    const holderOf = async (agentId: string): Promise<string | undefined> =>
      (
        await query<{ owner: string }>(
          `SELECT owner FROM ${schema}.partitions WHERE partition = ${schema}.partition_of($1) AND expires_at > clock_timestamp()`,
          [agentId],
        )
      )[0]?.owner;
    const pick = (): Coordinator => {
      const alive = processes.filter((process) => process.alive);
      return alive[Math.floor(random() * alive.length)]!;
    };
    const drive = async (agentId: string): Promise<void> => {
      for (let run = 0; run < runsPerAgent; ) {
        const tag = `${agentId}/run-${run}`;
        const sender = pick();
        if ((await holderOf(agentId)) === sender.name) sentToOwner += 1;
        sent += 1;
        const from = sender.lines.length;
        sender.send({ start: agentId, input: tag, tag, key: tag });
        const line = await Promise.race([
          sender
            .waitFor((candidate) => (candidate.type === "result" || candidate.type === "error") && candidate.tag === tag, 60_000, from)
            .catch(async (error: Error) => {
              // Say where the key is: its row, its filing, its partition.
              const executionId = startExecutionIdOf(agentId, tag);
              const [row] = await query(`SELECT status, phase, revision, outcome FROM ${schema}.executions WHERE execution_id = $1`, [executionId]);
              const filed = await query(
                `SELECT state, filed_by, claimed_by, claimed_epoch, claims, error FROM ${schema}.approval_inbox WHERE execution_id = $1`,
                [executionId],
              );
              const [partition] = await query(
                `SELECT partition, owner, epoch, expires_at > clock_timestamp() AS live FROM ${schema}.partitions WHERE partition = ${schema}.partition_of($1)`,
                [agentId],
              );
              const steps = await query(`SELECT seq, kind FROM ${schema}.steps WHERE execution_id = $1 ORDER BY seq`, [executionId]);
              throw new Error(
                `${replay}: ${tag} sent to ${sender.name} (alive ${String(sender.alive)}) got no answer: execution ${executionId} ${JSON.stringify(row)} steps ${JSON.stringify(steps)} filed ${JSON.stringify(filed)} partition ${JSON.stringify(partition)}; sender's last lines ${JSON.stringify(sender.lines.slice(-8))}`,
                { cause: error },
              );
            }),
          sender.exited.then(() => undefined),
        ]);
        if (line?.type === "result") {
          expect(line.outcome, replay).toBe("completed");
          run += 1;
          completed += 1;
          if (completed === killAfter) victim.kill("SIGKILL");
          if (completed === stopAfter && sleeper.alive) {
            sleeper.kill("SIGSTOP");
            void sleep(stoppedMs).then(() => sleeper.kill("SIGCONT"));
          }
          continue;
        }
        // The sender died, or the start was refused (busy behind a
        // recovery, …): send the same key again, to another process.
        sentAgain += 1;
        await sleep(retryMs);
      }
    };
    await Promise.all(agentIds.map(drive));
    expect(victim.alive, replay).toBe(false);

    const rows = await query<{ execution_id: string; input: string; status: string; outcome: string | null }>(
      `SELECT execution_id, input, status, outcome FROM ${schema}.executions`,
    );
    const tags = agentIds.flatMap((agentId) => Array.from({ length: runsPerAgent }, (_, run) => `${agentId}/run-${run}`));
    // Each key once: one execution per tag, all completed.
    expect(rows.map((row) => JSON.parse(row.input) as string).sort(), replay).toEqual(tags.sort());
    expect(
      rows.filter((row) => row.status !== "terminal" || row.outcome !== "completed"),
      replay,
    ).toEqual([]);
    const terminals = await query<{ execution_id: string; count: number }>(
      `SELECT execution_id, count(*)::int AS count FROM ${schema}.steps WHERE kind = 'terminal' GROUP BY execution_id`,
    );
    expect(
      terminals.filter((terminal) => terminal.count !== 1),
      replay,
    ).toEqual([]);
    expect(terminals.length, replay).toBe(rows.length);
    // Two tool keys per execution, none of an execution the store lacks.
    const effects = await query<{ key: string; attempts: number }>(`SELECT key, attempts FROM ${schema}.effects`);
    const keysPerExecution = new Map<string, number>();
    for (const { key } of effects)
      keysPerExecution.set(key.slice(0, key.lastIndexOf(":")), (keysPerExecution.get(key.slice(0, key.lastIndexOf(":"))) ?? 0) + 1);
    expect([...keysPerExecution.keys()].sort(), replay).toEqual(rows.map((row) => row.execution_id).sort());
    expect(
      [...keysPerExecution.values()].filter((count) => count !== 2),
      replay,
    ).toEqual([]);
    // No filed start left behind.
    const unsettled = await query(`SELECT execution_id, state FROM ${schema}.approval_inbox WHERE kind = 'start' AND state IN ('filed', 'claimed')`);
    const filed = await query<{ count: number }>(`SELECT count(*)::int AS count FROM ${schema}.approval_inbox WHERE kind = 'start'`);
    const repeated = effects.filter((effect) => effect.attempts > 1).length;
    console.log(
      `starts at random processes (${replay}): ${sent} sends (${sentToOwner} to the partition's holder), ${sentAgain} sent again, ${filed[0]!.count} keys filed, ${rows.length} executions all completed once; ${repeated} tool keys called more than once (a process died or lost the partition before recording the result); ${unsettled.length} filed starts left unsettled (their executions ran)`,
    );
  }, 360_000);
});
