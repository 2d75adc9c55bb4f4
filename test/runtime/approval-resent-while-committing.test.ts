// A decision sent again while the first one's approval commit is still
// under way (its outcome not known yet: written or not, read back or not).
// Found by test/postgres/approval-resend.test.ts failing once under load
// (APPROVAL_MISMATCH with no reason). Reproduced there under load (the sim
// beside it): the resumes reached the core before the suspension's commit
// was answered (refused as not suspended, last describe below). A decision
// reaching the core while the agent is `Resuming` was refused the same way
// (ResumeInProgress). Here each interleaving is forced
// on SQLite: the first approval commit is held at the store's door until
// the second resume has reached the core. The same decision follows the
// first (`FollowResume`): the same result; another decision is refused
// `decision_in_progress`; a decision on an execution already running on
// the first is refused from the row (`already_decided`).

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { StoreError, tool, type Environment } from "../../host/index.js";
import type { StoreOperation, StoreResult } from "../../host/store/records.js";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { openEnvironment, scriptedModel, temporaryStorePath, turnOf, waitFor } from "./helpers.js";

const refundModel = scriptedModel(({ messages }) =>
  turnOf(messages) === 0 ? { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] } : { text: "Refunded." },
);

type Ending = "committed" | "unknown_written" | "unknown_not_written";

/** A SQLite store whose first approval commit waits for `release()`, then
 * commits (`committed`), or fails with its outcome unknown after writing
 * or without. */
async function heldCommitStore(path: string, ending: Ending) {
  const store = await SqliteStore.open(path);
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reached!: () => void;
  const atDoor = new Promise<void>((resolve) => {
    reached = resolve;
  });
  let held = false;
  const run = async <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
    if (operation.type !== "approvalCommit" || held) return store.run(operation);
    held = true;
    reached();
    await released;
    if (ending === "committed") return store.run(operation);
    if (ending === "unknown_written") await store.run(operation);
    throw new StoreError("injected: the connection was lost during approvalCommit", { details: { outcome: "unknown" } });
  };
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "run") return run;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
  return { store: proxy, release, atDoor };
}

async function suspended(env: Environment, refunds: string[], refunding: Promise<void> = Promise.resolve()) {
  const refund = tool({
    description: "Refunds an order",
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: true,
    execute: async ({ orderId }, { idempotencyKey }) => {
      refunds.push(idempotencyKey);
      await refunding;
      return { refunded: orderId };
    },
  });
  const agent = env.agent({ id: "support", model: refundModel, tools: { refund } });
  const executionId = await agent.start("Refund order 42").executionId;
  const pending = await waitFor(async () => (await env.pendingApprovals()).find((approval) => approval.executionId === executionId));
  return { agent, executionId, approvalId: pending.request.approvalId };
}

/** A suspended execution on a store whose first approval commit is held
 * at the door (`heldCommitStore`), and the refunds its tool made. */
async function suspendedAtHeldStore(ending: Ending, refunding?: Promise<void>) {
  const held = await heldCommitStore(await temporaryStorePath(), ending);
  const env = await openEnvironment({ store: held.store });
  const refunds: string[] = [];
  return { held, env, refunds, ...(await suspended(env, refunds, refunding)) };
}

/** Resolves once a decision follows the one being committed (the core
 * answered `FollowResume` and the host carried it out). */
function followed(env: Environment, executionId: string): Promise<true> {
  return waitFor(async () => ((env.coordinator.requests.resumeOf(executionId)?.followers?.length ?? 0) > 0 ? true : undefined));
}

async function settled(run: Promise<unknown>) {
  return run.then(
    (result) => ({ result, error: undefined }),
    (error: unknown) => ({ result: undefined, error: error as { code?: string; message?: string; details?: { mismatch?: string } } }),
  );
}

describe("a decision sent again while its approval commit is under way", () => {
  it("committed: the same decision follows the first, and both get the run's outcome; the tool runs once", async () => {
    const { held, env, refunds, agent, executionId, approvalId } = await suspendedAtHeldStore("committed");
    const first = agent.resume(executionId, { approvalId, approved: true }).result;
    await held.atDoor;
    const second = agent.resume(executionId, { approvalId, approved: true }).result;
    await followed(env, executionId);
    held.release();
    const expected = { executionId, outcome: "completed", output: "Refunded." };
    await expect(first).resolves.toMatchObject(expected);
    await expect(second).resolves.toMatchObject(expected);
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  });

  it("outcome unknown, written: the same decision gets the first's refusal, and the execution goes on from the row", async () => {
    const { held, env, refunds, agent, executionId, approvalId } = await suspendedAtHeldStore("unknown_written");
    const first = settled(agent.resume(executionId, { approvalId, approved: true }).result);
    await held.atDoor;
    const second = settled(agent.resume(executionId, { approvalId, approved: true }).result);
    await followed(env, executionId);
    held.release();
    const [one, two] = await Promise.all([first, second]);
    expect(one.error).toBeDefined();
    expect(two.error).toBe(one.error);
    expect(two.error?.code).not.toBe("APPROVAL_MISMATCH");
    // Sent a third time: refused from the row, which holds the decision.
    const third = await settled(agent.resume(executionId, { approvalId, approved: true }).result);
    expect(third.error?.code).toBe("APPROVAL_MISMATCH");
    expect(["already_decided", "execution_ended"]).toContain(third.error?.details?.mismatch);
    await expect(env.wait(executionId).result).resolves.toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  });

  it("outcome unknown, not written: both get the first's refusal, and the decision sent later commits", async () => {
    const { held, env, refunds, agent, executionId, approvalId } = await suspendedAtHeldStore("unknown_not_written");
    const first = settled(agent.resume(executionId, { approvalId, approved: true }).result);
    await held.atDoor;
    const second = settled(agent.resume(executionId, { approvalId, approved: true }).result);
    await followed(env, executionId);
    held.release();
    const [one, two] = await Promise.all([first, second]);
    expect(two.error).toBe(one.error);
    await expect(agent.resume(executionId, { approvalId, approved: true }).result).resolves.toMatchObject({ outcome: "completed" });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  });

  it("another decision while one is being committed: refused decision_in_progress, nothing else decided", async () => {
    const { held, refunds, agent, executionId, approvalId } = await suspendedAtHeldStore("committed");
    const first = agent.resume(executionId, { approvalId, approved: true }).result;
    await held.atDoor;
    const other = await settled(agent.resume(executionId, { approvalId, approved: false, reason: "changed my mind" }).result);
    expect(other.error).toMatchObject({ code: "APPROVAL_MISMATCH", details: { mismatch: "decision_in_progress" } });
    held.release();
    await expect(first).resolves.toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  });

  it("sent again once a recovery read the written decision back: the execution runs on it, refused from the row (already_decided)", async () => {
    let refunded!: () => void;
    const refunding = new Promise<void>((resolve) => {
      refunded = resolve;
    });
    const { held, env, refunds, agent, executionId, approvalId } = await suspendedAtHeldStore("unknown_written", refunding);
    const first = settled(agent.resume(executionId, { approvalId, approved: true }).result);
    await held.atDoor;
    held.release();
    expect((await first).error).toBeDefined();
    // Recovered from the row, which holds the decision: live here again,
    // running its tool (held), not suspended.
    await env.recover();
    await waitFor(async () => (refunds.length > 0 ? true : undefined));
    const again = await settled(agent.resume(executionId, { approvalId, approved: true }).result);
    expect(again.error).toMatchObject({ code: "APPROVAL_MISMATCH", details: { mismatch: "already_decided" } });
    refunded();
    await expect(env.wait(executionId).result).resolves.toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  });
});

/** A SQLite store that writes the first suspension, then holds its answer
 * until `release()`: the row is read suspended (env.pendingApprovals lists
 * it) before the core has heard that it was written. */
async function heldSuspensionStore(path: string) {
  const store = await SqliteStore.open(path);
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = false;
  const run = async <O extends StoreOperation>(operation: O): Promise<StoreResult<O>> => {
    if (operation.type !== "terminalCommit" || operation.outcome !== "suspended" || held) return store.run(operation);
    held = true;
    const written = await store.run(operation);
    await released;
    return written;
  };
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "run") return run;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as ExecutionStore;
  return { store: proxy, release };
}

describe("a decision on a suspension listed before its commit was answered", () => {
  it("waits for the suspension, then is decided (was APPROVAL_MISMATCH, not suspended)", async () => {
    const held = await heldSuspensionStore(await temporaryStorePath());
    const env = await openEnvironment({ store: held.store });
    const refunds: string[] = [];
    // Listed from its row while the core still has the suspension's commit in flight.
    const { agent, executionId, approvalId } = await suspended(env, refunds);
    expect(env.coordinator.entryById(executionId)?.suspended).toBe(false);
    const decided = agent.resume(executionId, { approvalId, approved: true }).result;
    await waitFor(async () => ((env.coordinator.entryById(executionId)?.terminalWatchers.length ?? 0) > 0 ? true : undefined));
    held.release();
    await expect(decided).resolves.toMatchObject({ executionId, outcome: "completed", output: "Refunded." });
    expect(refunds).toEqual([`${executionId}:call-0-0`]);
  });
});
