// Approvals decided from any process (issue 7, docs/decisions/0011-approval-inbox.md),
// with real coordinator processes (fixtures/coordinator.ts) on one schema
// of the real PostgreSQL and 1 s leases: a standby files the decision in
// the approval inbox, the owner applies it through its resume path, and
// the standby's run settles from the durable rows. Judged by what the
// database holds: the inbox row, the execution, one effect per key.

import { describe, expect, it } from "vitest";
import { postgresUrl, withClient } from "./database.js";
import { freePartitionsSchema } from "./fixtures/free-schema.js";
import type { CoordinatorConfig, CoordinatorLine } from "./fixtures/coordinator.js";
import { coordinatorForTest, is } from "./fixtures/processes.js";

const leaseMs = 1_000;

async function setUp(): Promise<{ schema: string; config: CoordinatorConfig }> {
  // One partition (docs/decisions/0030), as new: the owner keeps the agent's
  // while the standby lives, and takes it at epoch 1.
  const { schema, url } = await freePartitionsSchema(leaseMs, 1);
  await withClient((client) => client.query(`CREATE TABLE ${schema}.effects (key text PRIMARY KEY, first_pid integer NOT NULL, attempts integer NOT NULL)`));
  return { schema, config: { url, databaseUrl: postgresUrl, schema, agents: ["billing"], refundAgents: ["billing"] } };
}

const coordinator = coordinatorForTest;
const tagged =
  (tag: string) =>
  (line: CoordinatorLine): boolean =>
    (line.type === "result" || line.type === "error") && line.tag === tag;

async function query<T extends Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> {
  return withClient(async (client) => (await client.query<T>(sql, values)).rows);
}

/** An owner with an execution suspended for approval, and a standby. */
async function suspendedOnOwner(config: CoordinatorConfig) {
  const owner = coordinator("owner", config);
  const ownerReady = await owner.waitFor(is("ready"));
  expect(ownerReady.leases).toEqual([expect.objectContaining({ acquired: true, epoch: 1 })]);
  const standby = coordinator("standby", config);
  expect((await standby.waitFor(is("ready"))).leases).toEqual([expect.objectContaining({ acquired: false })]);
  owner.send({ start: "billing", input: "Refund order 42", tag: "refund" });
  const approval = await owner.waitFor(is("approval"));
  return { owner, standby, executionId: approval.executionId, approvalId: approval.approvalId };
}

describe("approvals decided from any process (PostgreSQL approval inbox)", () => {
  it("a standby resumes an execution suspended in the owner: the owner applies it, the tool runs once, the standby's run resolves completed", async () => {
    const { schema, config } = await setUp();
    const { owner, standby, executionId, approvalId } = await suspendedOnOwner(config);
    const startedAt = Date.now();
    standby.send({ resume: executionId, agent: "billing", approvalId, approved: true, tag: "decide" });
    expect(await standby.waitFor(is("filed"))).toMatchObject({ executionId });
    const settled = await standby.waitFor(tagged("decide"));
    console.log(`inbox resume: the standby's run settled ${Date.now() - startedAt} ms after it was sent`);
    expect(settled).toMatchObject({ type: "result", executionId, outcome: "completed" });
    // The owner ran the tool, once; its own waiter on the execution completed too.
    expect(await owner.waitFor(tagged("refund"))).toMatchObject({ type: "result", outcome: "completed" });
    expect(owner.lines.flatMap((line) => (line.type === "tool" ? [line.key] : []))).toEqual([`${executionId}:call-0-0`]);
    expect(standby.lines.filter(is("tool"))).toEqual([]);
    expect(await query(`SELECT key, attempts FROM ${schema}.effects`)).toEqual([{ key: `${executionId}:call-0-0`, attempts: 1 }]);
    expect(await query(`SELECT status, outcome FROM ${schema}.executions`)).toEqual([{ status: "terminal", outcome: "completed" }]);
    // The owner marks the decision applied in a write of its own, which may land after the execution finished.
    await untilApplied(schema);
    const [decision] = await query(`SELECT state, filed_by, claimed_by, claims, error FROM ${schema}.approval_inbox`);
    // Named by instance id (docs/decisions/0030): the owner's and the standby's ready lines carry theirs.
    const ownerId = (await owner.waitFor(is("ready"))).owner;
    const standbyId = (await standby.waitFor(is("ready"))).owner;
    expect(ownerId).not.toBe(standbyId);
    expect(decision).toMatchObject({ state: "applied", filed_by: standbyId, claimed_by: ownerId, claims: 1, error: null });
  }, 60_000);

  it("a wrong approval id from the standby is refused with ApprovalMismatchError and nothing is written", async () => {
    const { schema, config } = await setUp();
    const { standby, executionId } = await suspendedOnOwner(config);
    const before = await query(`SELECT revision, status, updated_at FROM ${schema}.executions`);
    standby.send({ resume: executionId, agent: "billing", approvalId: "not-the-one", approved: true, tag: "wrong" });
    expect(await standby.waitFor(tagged("wrong"))).toMatchObject({
      type: "error",
      code: "APPROVAL_MISMATCH",
      name: "ApprovalMismatchError",
      mismatch: "approval_id",
    });
    expect(standby.lines.some(is("filed"))).toBe(false);
    expect(await query(`SELECT count(*)::int AS count FROM ${schema}.approval_inbox`)).toEqual([{ count: 0 }]);
    expect(await query(`SELECT revision, status, updated_at FROM ${schema}.executions`)).toEqual(before);
    expect(await query(`SELECT count(*)::int AS count FROM ${schema}.effects`)).toEqual([{ count: 0 }]);
  }, 60_000);

  it("a decision filed while the owner is stopped, then the owner killed: the standby takes over, recovers, applies it once, and its run settles", async () => {
    const { schema, config } = await setUp();
    const { owner, standby, executionId, approvalId } = await suspendedOnOwner(config);
    // The owner can no longer apply anything, nor renew its lease. Its
    // epoch now: on a loaded machine it may have renewed late and taken
    // its own partition again, so the standby's is only known to be higher.
    const ownerEpoch = (await query<{ epoch: number }>(`SELECT max(epoch)::int AS epoch FROM ${schema}.partitions`))[0]!.epoch;
    owner.kill("SIGSTOP");
    standby.send({ resume: executionId, agent: "billing", approvalId, approved: true, tag: "decide" });
    await standby.waitFor(is("filed"));
    expect(standby.lines.some(is("takeover"))).toBe(false);
    expect(await query(`SELECT state FROM ${schema}.approval_inbox`)).toEqual([{ state: "filed" }]);
    owner.kill("SIGKILL");
    await owner.exited;

    const takeover = await standby.waitFor(is("takeover"), 10 * leaseMs);
    expect(takeover.epoch).toBeGreaterThan(ownerEpoch);
    expect(await standby.waitFor(tagged("decide"), 20_000)).toMatchObject({ type: "result", executionId, outcome: "completed" });
    expect(standby.lines.flatMap((line) => (line.type === "tool" ? [line.key] : []))).toEqual([`${executionId}:call-0-0`]);
    expect(await query(`SELECT key, attempts FROM ${schema}.effects`)).toEqual([{ key: `${executionId}:call-0-0`, attempts: 1 }]);
    expect(await query(`SELECT status, outcome FROM ${schema}.executions`)).toEqual([{ status: "terminal", outcome: "completed" }]);
    await untilApplied(schema);
    const [decision] = await query<{ state: string; claims: number; claimed_epoch: string }>(
      `SELECT state, claims, claimed_epoch FROM ${schema}.approval_inbox`,
    );
    expect(decision).toMatchObject({ state: "applied", claims: 1 });
    // Claimed once, at an epoch the standby took.
    const takenEpochs = standby.lines.flatMap((line) => (line.type === "takeover" ? [String(line.epoch)] : []));
    expect(takenEpochs).toContain(decision!.claimed_epoch);
    expect(await query(`SELECT count(*)::int AS count FROM ${schema}.steps WHERE kind = 'approval_decided'`)).toEqual([{ count: 1 }]);
  }, 60_000);
});

/** Waits (at most 5 s) until every decision of the schema's inbox is applied. */
async function untilApplied(schema: string): Promise<void> {
  for (let attempt = 0; attempt < 250; attempt += 1) {
    const rows = await query<{ state: string }>(`SELECT state FROM ${schema}.approval_inbox`);
    if (rows.length > 0 && rows.every((row) => row.state === "applied")) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
