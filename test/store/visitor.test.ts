// Visitors of a SQLite store (SPEC §4.3, docs/decisions/0015), on real
// files beside a real owner (the ownership lock is per connection, so an
// owner SqliteStore and a visitor share this process): a visitor reads what
// the owner commits, refuses every write, refuses a file that is not a
// store of exactly this schema version, and files decisions into the
// approval inbox — refused at once, nothing written, when they cannot
// apply — which the owner notices, claims once and settles.

import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ApprovalMismatchError, InvalidInputError, StoreError } from "../../host/errors.js";
import { schemaVersion } from "../../host/store/sqlite/schema.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { SqliteVisitorStore } from "../../host/store/sqlite-visitor.js";
import { openTemporaryStore, prepare, providerBarrier, rawExec, rawValue, suspendForApproval, temporaryDirectory, beforeVersion14, track } from "./fixtures.js";
import { quietSignals } from "../../host/store/capabilities.js";

const visitors: SqliteVisitorStore[] = [];

// Registered after the fixtures' own hook, so it runs first: visitors close
// before their directories are removed.
afterEach(async () => {
  await Promise.all(visitors.splice(0).map((visitor) => visitor.close()));
});

async function visit(path: string): Promise<SqliteVisitorStore> {
  const visitor = await SqliteStore.openVisitor(path);
  visitors.push(visitor);
  return visitor;
}

/** e1 of agent support, suspended on approval-1 at revision 3. */
async function ownerWithSuspension(): Promise<SqliteStore> {
  const owner = await openTemporaryStore();
  await owner.ensureAgent("support", 1);
  await owner.run(prepare("e1"));
  await owner.run(providerBarrier("e1", 1));
  await owner.run(suspendForApproval("e1", 2));
  return owner;
}

function filing(approvalId = "approval-1", executionId = "e1", agentId = "support") {
  return { decisionId: `d-${Math.random().toString(36).slice(2)}`, executionId, agentId, approvalId, approved: true, reason: "fine", filedAt: 5 };
}

async function refusal(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error("it was not refused");
    },
    (error: unknown) => error as Error,
  );
}

describe("a visitor beside a live owner", () => {
  it("reads what the owner commits, without taking ownership", async () => {
    const owner = await ownerWithSuspension();
    const visitor = await visit(owner.path);
    expect((await visitor.getExecution("e1"))?.status).toBe("suspended");
    expect((await visitor.listExecutions()).map((row) => row.executionId)).toEqual(["e1"]);
    expect((await visitor.unfinishedExecutions()).length).toBe(1);
    expect((await visitor.listSteps("e1")).at(-1)?.kind).toBe("approval_requested");
    expect((await visitor.getAgent("support"))?.lifecycle).toBe("open");
    await owner.ensureAgent("billing", 1);
    await owner.run(prepare("e2", "billing"));
    expect((await visitor.getExecution("e2"))?.agentId).toBe("billing");
    // The owner still owns it: a second owner is refused, naming it.
    expect((await refusal(SqliteStore.open(owner.path))).message).toContain("owned by this very process");
    await visitor.close();
    await expect(visitor.getExecution("e1")).rejects.toThrow(/is closed/);
  });

  it("refuses every write with a StoreError that says a visitor never writes executions", async () => {
    const owner = await ownerWithSuspension();
    const visitor = await visit(owner.path);
    for (const attempt of [
      visitor.run(prepare("e3")),
      visitor.ensureAgent("support", 1),
      visitor.closeAgent("support", 1),
      visitor.purgeAgent("support"),
      visitor.claimDecisions(),
    ]) {
      const error = await refusal(attempt);
      expect(error).toBeInstanceOf(StoreError);
      expect(error.message).toContain("a visitor never writes executions");
      expect((error as StoreError).details).toMatchObject({ reason: "visitor" });
    }
    expect(await owner.getExecution("e3")).toBeUndefined();
  });

  it("works with no owner too, and a later owner can still take the store", async () => {
    const owner = await ownerWithSuspension();
    const path = owner.path;
    await owner.close();
    const visitor = await visit(path);
    expect((await visitor.getExecution("e1"))?.status).toBe("suspended");
    const next = track(await SqliteStore.open(path));
    expect((await next.getExecution("e1"))?.revision).toBe(3);
  });
});

describe("what a visitor refuses to open", () => {
  it("a missing file, a foreign file, another application's database, an older or newer schema", async () => {
    const directory = await temporaryDirectory();
    const missing = join(directory, "missing.db");
    expect((await refusal(SqliteStore.openVisitor(missing))).message).toContain("a visitor never creates a store");
    const notes = join(directory, "notes.db");
    await writeFile(notes, "not a database\n".repeat(10));
    expect((await refusal(SqliteStore.openVisitor(notes))).message).toContain("is not a SQLite database");
    const foreign = join(directory, "foreign.db");
    rawExec(foreign, "CREATE TABLE notes (body TEXT)");
    expect((await refusal(SqliteStore.openVisitor(foreign))).message).toContain("not a Phronomy store");

    const owner = await openTemporaryStore();
    const path = owner.path;
    await owner.close();
    // A version-1 store (before the inbox): refused, left as it is, until its owner migrates it.
    rawExec(
      path,
      `${beforeVersion14} DROP TRIGGER execution_counts_insert; DROP TRIGGER execution_counts_update; DROP TRIGGER execution_counts_delete; DROP TABLE execution_counts; DROP INDEX executions_by_definition; DROP INDEX executions_due; DROP TABLE event_signals; DROP INDEX executions_wait_key; DROP TABLE schedules; DROP TRIGGER queued_message_admitted; DROP TABLE queued_messages; DROP TABLE approval_inbox; DROP INDEX executions_finished; DROP TRIGGER execution_search_update; DROP TRIGGER execution_search_delete; DROP TABLE execution_search_mark; DROP TABLE execution_search_pending; DROP TABLE execution_search; DROP INDEX executions_by_time; DROP INDEX executions_by_outcome; PRAGMA user_version = 1`,
    );
    const older = await refusal(SqliteStore.openVisitor(path));
    expect(older).toBeInstanceOf(StoreError);
    expect(older.message).toContain("its owner must migrate it");
    expect(rawValue(path, "PRAGMA user_version"), "nothing migrated").toBe(1);
    await (await SqliteStore.open(path)).close();
    expect(rawValue(path, "PRAGMA user_version"), "the owner migrated it").toBe(schemaVersion);
    await (await visit(path)).close();
    rawExec(path, `PRAGMA user_version = ${schemaVersion + 1}`);
    expect((await refusal(SqliteStore.openVisitor(path))).message).toContain("newer Phronomy");
  });
});

describe("the approval inbox", () => {
  it("a visitor files a decision; the owner notices it, claims it once and marks it applied", async () => {
    const owner = await ownerWithSuspension();
    const visitor = await visit(owner.path);
    const woken: string[] = [];
    owner.listen({ ...quietSignals, approvalFiled: (agentId) => woken.push(agentId) });
    const filed = await visitor.fileDecision(filing());
    expect(filed.executionRevision).toBe(3);
    await expect.poll(() => woken, { timeout: 2_000 }).toContain("support");
    const claims = await owner.claimDecisions("support");
    expect(claims).toEqual([expect.objectContaining({ decisionId: filed.decisionId, approvalId: "approval-1", approved: true, reason: "fine", claims: 1 })]);
    expect(await owner.claimDecisions("support"), "claimed once").toEqual([]);
    expect(await owner.settleDecision(claims[0]!, { applied: true })).toBe(true);
    const [progress] = await visitor.readDecisions([filed.decisionId]);
    expect(progress).toMatchObject({ state: "applied", executionId: "e1", execution: { status: "suspended", revision: 3 } });
    // A settled approval may be decided again (a new suspension reuses nothing).
    expect(rawValue(owner.path, "SELECT count(*) FROM executions")).toBe(1);
  });

  it("refuses at once, writing nothing, a decision that cannot apply", async () => {
    const owner = await ownerWithSuspension();
    await owner.ensureAgent("billing", 1);
    await owner.run(prepare("e2", "billing"));
    const visitor = await visit(owner.path);
    const cases: [ReturnType<typeof filing>, string][] = [
      [filing("approval-1", "nope"), "INVALID_INPUT"],
      [filing("approval-1", "e1", "billing"), "agent"],
      [filing("approval-1", "e2", "billing"), "not_suspended"],
      [filing("approval-9"), "approval_id"],
    ];
    for (const [attempt, expected] of cases) {
      const error = await refusal(visitor.fileDecision(attempt));
      if (expected === "INVALID_INPUT") expect(error).toBeInstanceOf(InvalidInputError);
      else expect((error as ApprovalMismatchError).details).toMatchObject({ mismatch: expected });
    }
    expect(rawValue(owner.path, "SELECT count(*) FROM approval_inbox")).toBe(0);
    await visitor.fileDecision(filing());
    const second = await refusal(visitor.fileDecision(filing()));
    expect((second as ApprovalMismatchError).details).toMatchObject({ mismatch: "already_filed" });
    expect(rawValue(owner.path, "SELECT count(*) FROM approval_inbox")).toBe(1);
  });

  it("a claim left by a closed owner is claimed again by the next one", async () => {
    const owner = await ownerWithSuspension();
    const path = owner.path;
    const visitor = await visit(path);
    const filed = await visitor.fileDecision(filing());
    expect((await owner.claimDecisions("support")).length).toBe(1);
    await owner.close();
    const next = track(await SqliteStore.open(path));
    const again = await next.claimDecisions("support");
    expect(again).toEqual([expect.objectContaining({ decisionId: filed.decisionId, claims: 2 })]);
    expect(await owner.settleDecision(again[0]!, { applied: true }).catch(() => false), "the former owner cannot settle it").toBe(false);
    expect(await next.settleDecision(again[0]!, { applied: false, error: { code: "APPROVAL_MISMATCH", message: "no" } })).toBe(true);
    expect((await visitor.readDecisions([filed.decisionId]))[0]).toMatchObject({ state: "refused", error: { code: "APPROVAL_MISMATCH" } });
  });
});
