// The approval inbox of the PostgreSQL store in one process
// (host/store/postgres/inbox.ts, docs/decisions/0011-approval-inbox.md):
// migration 2, filing (and its refusals, which write nothing), the
// notification, claims at most once per lease epoch under concurrency, and
// what a successor does with a claim a dead owner left behind.

import pg from "pg";
import { describe, expect, it } from "vitest";
import { ApprovalMismatchError, InvalidInputError } from "../../host/errors.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import * as inbox from "../../host/store/postgres/inbox.js";
import { migrations, schemaVersion } from "../../host/store/postgres/schema.js";
import { approvalCommit, prepare, providerBarrier, suspendForApproval } from "../store/fixtures.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";
import { quietSignals } from "../../host/store/capabilities.js";

/** Long enough that no lease tick runs during a test, unless asked. */
const quietLeaseMs = 600_000;

async function open(schema: string, leaseMs = quietLeaseMs): Promise<PostgresStore> {
  // One partition: the owner keeps the agent's while the standby lives (docs/decisions/0030).
  const store = await PostgresStore.open(`${postgresUrl}?schema=${schema}`, { leaseMs, partitions: 1 });
  atEnd(() => store.close());
  return store;
}

/** An owner holding agent "support" with executions suspended for
 * approval ("approval-1" each, at revision 3), and a standby. */
async function setUp(executionIds: readonly string[] = ["e1"], leaseMs = quietLeaseMs) {
  const schema = freshSchema();
  const owner = await open(schema, leaseMs);
  const standby = await open(schema, leaseMs);
  await owner.ensureAgent("support", 1);
  expect(await owner.acquireLease("support")).toMatchObject({ acquired: true, epoch: 1 });
  expect(await standby.acquireLease("support")).toMatchObject({ acquired: false });
  for (const executionId of executionIds) {
    await owner.run(prepare(executionId));
    await owner.run(providerBarrier(executionId, 1));
    await owner.run(suspendForApproval(executionId, 2));
  }
  return { schema, owner, standby };
}

function filing(executionId: string, extra: Partial<Omit<inbox.DecisionFiling, "filedBy">> = {}): Omit<inbox.DecisionFiling, "filedBy"> {
  return {
    decisionId: `decision-${executionId}`,
    executionId,
    agentId: "support",
    approvalId: "approval-1",
    approved: true,
    reason: null,
    filedAt: 70,
    ...extra,
  };
}

async function rows(schema: string): Promise<Record<string, unknown>[]> {
  return withClient(
    async (client) => (await client.query(`SELECT decision_id, state, claims, claimed_epoch FROM ${schema}.approval_inbox ORDER BY decision_id`)).rows,
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the approval inbox (PostgreSQL store)", () => {
  it("migrates a version-1 store forward (migration 2 adds the inbox), keeping the rows", async () => {
    const schema = freshSchema();
    await withClient(async (client) => {
      await client.query(`CREATE SCHEMA ${schema}; SET search_path = ${schema}`);
      await migrations[0]!(client);
      await client.query("CREATE TABLE store_version (application text NOT NULL, version integer NOT NULL); INSERT INTO store_version VALUES ('phronomy', 1)");
      await client.query("INSERT INTO agents VALUES ('support', 'open', 1, 1, 1)");
    });
    const store = await open(schema);
    expect(schemaVersion).toBeGreaterThanOrEqual(2);
    expect(await store.getAgent("support")).toMatchObject({ agentId: "support" });
    expect(await rows(schema)).toEqual([]);
    const version = await withClient((client) => client.query(`SELECT version FROM ${schema}.store_version`));
    expect(version.rows).toEqual([{ version: schemaVersion }]);
  });

  it("files a decision on the pending approval (state filed, the suspended revision) and notifies the agent id on the schema's channel", async () => {
    const { schema, standby } = await setUp();
    const listener = new pg.Client({ connectionString: postgresUrl });
    await listener.connect();
    atEnd(() => listener.end());
    const payloads: string[] = [];
    listener.on("notification", (message) => payloads.push(`${message.channel}/${message.payload ?? ""}`));
    await listener.query(`LISTEN "${inbox.inboxChannelOf(schema)}"`);

    expect(await standby.fileDecision(filing("e1", { reason: "within policy" }))).toEqual({ decisionId: "decision-e1", executionRevision: 3 });
    const [row] = await withClient(async (client) => (await client.query(`SELECT * FROM ${schema}.approval_inbox`)).rows);
    expect(row).toMatchObject({
      decision_id: "decision-e1",
      execution_id: "e1",
      agent_id: "support",
      approval_id: "approval-1",
      approved: true,
      reason: "within policy",
      filed_by: standby.leaseOwner,
      state: "filed",
      claims: 0,
    });
    for (let attempt = 0; attempt < 100 && payloads.length === 0; attempt += 1) await sleep(10);
    expect(payloads).toEqual([`${inbox.inboxChannelOf(schema)}/support`]);
    expect(inbox.inboxChannelOf("x".repeat(63))).toHaveLength(63);
  });

  it("refuses at once and writes nothing: unknown execution, another agent, not suspended, another approval id, a second filing", async () => {
    const { schema, owner, standby } = await setUp();
    await owner.ensureAgent("billing", 1);
    await owner.run(prepare("e2"));
    await expect(standby.fileDecision(filing("nope"))).rejects.toBeInstanceOf(InvalidInputError);
    await expect(standby.fileDecision(filing("e1", { agentId: "billing" }))).rejects.toMatchObject({
      code: "APPROVAL_MISMATCH",
      details: { mismatch: "agent", storedAgentId: "support" },
    });
    await expect(standby.fileDecision(filing("e2"))).rejects.toMatchObject({
      code: "APPROVAL_MISMATCH",
      details: { mismatch: "not_suspended", status: "active" },
    });
    const wrong = standby.fileDecision(filing("e1", { approvalId: "approval-9" }));
    await expect(wrong).rejects.toBeInstanceOf(ApprovalMismatchError);
    await expect(wrong).rejects.toThrow(/approval approval-9 is not the pending approval of execution e1 \(that is approval-1\); nothing was filed/);
    expect(await rows(schema)).toEqual([]);

    await standby.fileDecision(filing("e1"));
    await expect(standby.fileDecision(filing("e1", { decisionId: "again", approved: false }))).rejects.toMatchObject({
      code: "APPROVAL_MISMATCH",
      details: { mismatch: "already_filed", decisionId: "decision-e1", filedBy: standby.leaseOwner },
    });
    expect(await rows(schema)).toEqual([{ decision_id: "decision-e1", state: "filed", claims: 0, claimed_epoch: null }]);
  });

  it("claims each decision once under concurrent claimers; a process without the agent's lease claims nothing", async () => {
    const executionIds = ["e1", "e2", "e3", "e4", "e5"];
    const { schema, owner, standby } = await setUp(executionIds);
    for (const executionId of executionIds) await standby.fileDecision(filing(executionId));
    const fence = owner.leaseOf("support")!;
    const claimers = [
      owner.claimDecisions("support"),
      owner.claimDecisions("support"),
      inbox.claimDecisions(owner.pool, "support", fence),
      inbox.claimDecisions(standby.pool, "support", fence),
      standby.claimDecisions("support"),
      inbox.claimDecisions(standby.pool, "support", { owner: standby.leaseOwner, epoch: 1 }),
    ];
    const claimed = (await Promise.all(claimers)).flat();
    expect(claimed.map((claim) => claim.decisionId).sort()).toEqual(executionIds.map((executionId) => `decision-${executionId}`));
    expect(claimed.every((claim) => claim.claims === 1 && claim.claimedEpoch === 1)).toBe(true);
    expect(await owner.claimDecisions("support")).toEqual([]);
    expect((await rows(schema)).every((row) => row["state"] === "claimed" && row["claims"] === 1)).toBe(true);
    // Settling is fenced too: only the claim's owner marks it.
    expect(await standby.settleDecision(claimed[0]!, { applied: true })).toBe(false);
    expect(await owner.settleDecision(claimed[0]!, { applied: false, error: { code: "APPROVAL_MISMATCH", message: "refused" } })).toBe(true);
    expect(await owner.settleDecision(claimed[0]!, { applied: true })).toBe(false);
    const [progress] = await standby.readDecisions([claimed[0]!.decisionId]);
    expect(progress).toMatchObject({
      state: "refused",
      error: { code: "APPROVAL_MISMATCH", message: "refused" },
      execution: { status: "suspended", revision: 3 },
    });
  });

  it("claims not announced ask first, in one batched read: nothing waiting claims nothing; a decision waiting is claimed (docs/decisions/0048)", async () => {
    const { schema, owner, standby } = await setUp(["e1", "e2"]);
    const probes = (owner as unknown as { inboxProbes: { figures: { statements: number; questions: number } } }).inboxProbes.figures;
    const before = { ...probes };
    expect(await Promise.all([owner.claimDecisions("support"), owner.claimDecisions("support"), owner.claimDecisions("support", true)])).toEqual([[], [], []]);
    expect({ statements: probes.statements - before.statements, questions: probes.questions - before.questions }).toEqual({ statements: 1, questions: 3 });
    await standby.fileDecision(filing("e1"));
    expect(await owner.claimDecisions("support", true)).toEqual([]);
    expect((await owner.claimDecisions("support")).map((claim) => claim.decisionId)).toEqual(["decision-e1"]);
    expect(await rows(schema)).toEqual([{ decision_id: "decision-e1", state: "claimed", claims: 1, claimed_epoch: "1" }]);
  });

  it("after a takeover the successor claims again what the dead owner claimed, and the timeline tells whether its commit landed", async () => {
    const { schema, owner, standby } = await setUp(["e1", "e2"]);
    await standby.fileDecision(filing("e1"));
    await standby.fileDecision(filing("e2"));
    const firstClaims = await owner.claimDecisions("support");
    expect(firstClaims).toHaveLength(2);
    // The owner's commit of e1's decision landed; then it "died" (its lease lapsed) before settling either.
    await owner.run(approvalCommit("e1", 3));
    await withClient((client) => client.query(`UPDATE ${schema}.partitions SET expires_at = clock_timestamp()`));
    expect(await standby.acquireLease("support")).toMatchObject({ acquired: true, epoch: 2 });

    const again = await standby.claimDecisions("support");
    expect(again.map((claim) => [claim.decisionId, claim.claims, claim.claimedEpoch])).toEqual([
      ["decision-e1", 2, 2],
      ["decision-e2", 2, 2],
    ]);
    expect(await owner.settleDecision(firstClaims[0]!, { applied: true })).toBe(false);
    expect(await standby.approvalDecided("e1", "approval-1")).toEqual({ approved: true });
    expect(await standby.approvalDecided("e2", "approval-1")).toBeUndefined();
    expect(await standby.settleDecision(again[0]!, { applied: true })).toBe(true);
    const progress = await owner.readDecisions(["decision-e1", "decision-e2", "unknown"]);
    expect(progress.map((item) => [item.decisionId, item.state, item.execution?.phase])).toEqual(
      expect.arrayContaining([
        ["decision-e1", "applied", "resuming"],
        ["decision-e2", "claimed", "suspended"],
      ]),
    );
    expect(progress).toHaveLength(2);
  });

  it("the owner's store signals approvalFiled on a notification, and on the lease tick's poll when the notification was missed", async () => {
    const { owner, standby } = await setUp(["e1", "e2"], 300);
    const woken: string[] = [];
    owner.listen({ ...quietSignals, approvalFiled: (agentId) => woken.push(agentId) });
    await waitForListener(owner);
    await standby.fileDecision(filing("e1"));
    for (let attempt = 0; attempt < 100 && woken.length === 0; attempt += 1) await sleep(5);
    expect(woken[0]).toBe("support");
    // The standby does not hold the agent: told nothing.
    const standbyWoken: string[] = [];
    standby.listen({ ...quietSignals, approvalFiled: (agentId) => standbyWoken.push(agentId) });
    // The poll: the callback is called while a decision waits (every tick).
    woken.length = 0;
    await sleep(250);
    expect(woken.length).toBeGreaterThan(0);
    expect(standbyWoken).toEqual([]);
    // Nothing left to claim: the poll stays quiet.
    await owner.claimDecisions("support");
    await sleep(150);
    woken.length = 0;
    await sleep(250);
    expect(woken).toEqual([]);
  });
});

/** Waits until the store's LISTEN connection is in place. */
async function waitForListener(store: PostgresStore): Promise<void> {
  const channel = inbox.inboxChannelOf(store.schema);
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const found = await withClient((client) => client.query("SELECT 1 FROM pg_stat_activity WHERE query = $1", [`LISTEN "${channel}"`]));
    if ((found.rowCount ?? 0) > 0) return;
    await sleep(10);
  }
  throw new Error(`the store never listened on ${channel}`);
}
