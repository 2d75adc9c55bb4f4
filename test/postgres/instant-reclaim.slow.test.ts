// Instant reclaim (issue 13, docs/decisions/0030): a coordinator process
// opened with the instance id of a process that died (kill -9) takes that
// process's partitions at once, at a higher epoch — it holds the id's
// session lock, so no live process has them — and finishes the dead
// process's execution, without waiting for the 5 s lease to expire. The
// times are printed, never asserted.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";
import { coordinatorForTest, is } from "./fixtures/processes.js";

/** Long: a takeover by expiry would take 3–5 s; the reclaim does not wait. */
const leaseMs = 5_000;

describe("instant reclaim by instance id (PostgreSQL partitions)", () => {
  it("a process restarted with the dead one's instanceId reclaims its partitions at once, at a higher epoch, and finishes its execution with each tool effect once per key", async () => {
    const schema = freshSchema();
    const url = `${postgresUrl}?schema=${schema}&lease_ms=${leaseMs}`;
    await (await PostgresStore.open(url, { instanceId: "setup" })).close();
    await withClient((client) => client.query(`CREATE TABLE ${schema}.effects (key text PRIMARY KEY, first_pid integer NOT NULL, attempts integer NOT NULL)`));
    const directory = await mkdtemp(join(tmpdir(), "phronomy-reclaim-"));
    atEnd(() => rm(directory, { recursive: true, force: true }));
    const config = { url, databaseUrl: postgresUrl, schema, agents: ["support"], instanceId: "box-1" };

    const first = coordinatorForTest("first", { ...config, gate: join(directory, "never-opens") });
    expect((await first.waitFor(is("ready"))).owner).toBe("box-1");
    first.send({ start: "support", tag: "first" });
    const admitted = await first.waitFor(is("admitted"));
    await first.waitFor(is("tool"));
    const partitionOf = async () =>
      (
        await withClient((client) =>
          client.query<{ owner: string; epoch: string; live: boolean }>(
            `SELECT owner, epoch, expires_at > clock_timestamp() AS live FROM ${schema}.partitions WHERE partition = ${schema}.partition_of('support')`,
          ),
        )
      ).rows[0]!;
    const before = await partitionOf();
    expect(before).toMatchObject({ owner: "box-1", live: true });

    first.kill("SIGKILL");
    await first.exited;
    const killedAt = Date.now();
    const second = coordinatorForTest("second", config);
    const opened = await second.waitFor(is("opened"));
    expect(opened.owner).toBe("box-1");
    // Reclaimed while the dead process's lease was still running.
    const reclaimed = await partitionOf();
    expect(reclaimed).toMatchObject({ owner: "box-1", epoch: String(Number(before.epoch) + 1), live: true });

    let row: { status: string; outcome: string | null } | undefined;
    for (;;) {
      row = (
        await withClient((client) =>
          client.query<{ status: string; outcome: string | null }>(`SELECT status, outcome FROM ${schema}.executions WHERE execution_id = $1`, [
            admitted.executionId,
          ]),
        )
      ).rows[0];
      if (row?.status === "terminal") break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const doneAt = Date.now();
    console.log(
      `instant reclaim: the dead process's execution done ${doneAt - opened.at} ms after the restarted process opened its store (${doneAt - killedAt} ms after kill -9, process start included; lease ${leaseMs} ms)`,
    );
    expect(row).toMatchObject({ status: "terminal", outcome: "completed" });
    const effects = await withClient((client) => client.query<{ key: string }>(`SELECT key FROM ${schema}.effects ORDER BY key`));
    expect(effects.rows.map((effect) => effect.key)).toEqual([`${admitted.executionId}:call-0-0`, `${admitted.executionId}:call-1-0`]);
    // No takeover by expiry happened: the second process reclaimed, it took nothing over.
    expect(second.lines.some((line) => line.type === "takeover")).toBe(false);
    second.send({ close: true });
    await second.exited;
  }, 60_000);
});
