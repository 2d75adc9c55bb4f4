// A start arriving at a process that does not hold its conversation's
// partition (issue 26 part 3, docs/decisions/0068): the process files it
// for the holder from its last tick's view of the partition table — no
// on-demand take, no read of the holder — and its Run is settled by the
// reads its owner's notifications ask for, several at a time, so a read
// under way does not hold back the read of a later write. And when the
// holder lets the partition go just after that view was taken, the start
// filed for it still runs once, with the conversation's suspended and
// queued work and its idempotency key, at whoever takes the partition.
// The owner claims a start filed meanwhile in a second pass without
// breaking filing order; the filer reads in one statement; and no durable
// write carries a NOTIFY (PostgreSQL would commit them one at a time):
// each is told after it committed.
//
// The filer's poll is held in the first test (a read of a start nobody
// told it about waits): only the told reads can settle the Run.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConversationPhase } from "../../assembly/abi.js";
import { Phronomy, tool, type Environment } from "../../host/index.js";
import { scriptedModel } from "../../host/agent/scripted-model.js";
import pg from "pg";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { releasedChannelOf } from "../../host/store/postgres/inbox.js";
import { agentRunModel, lookupTool, recordingLogger, turnOf, type RecordedCall } from "../runtime/helpers.js";
import { atEnd, postgresUrl, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";

/** Long enough that no lease lapses on a loaded machine; its tick (a third)
 * is the window in which the filer's view can be out of date. */
const leaseMs = 3_000;

/** The core's phase of the conversation live here. */
function phaseOf(environment: Environment, agentId: string): number | undefined {
  const slot = environment.conversations.slotOf(agentId);
  return slot === undefined ? undefined : environment.core.conversation(slot).phase;
}

async function openAs(url: string, instanceId: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId } });
  atEnd(() => environment.close());
  return environment;
}

/** The statements the store's pool sends that take a partition on demand
 * or read its holder. (The lease tick runs on a connection of its own.) */
function partitionStatements(store: PostgresStore): string[] {
  const sent: string[] = [];
  const query = store.pool.query.bind(store.pool) as (...args: unknown[]) => unknown;
  (store.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const text = typeof args[0] === "string" ? args[0] : String((args[0] as { text?: unknown } | undefined)?.text ?? "");
    if (text.includes("take_partitions") || /SELECT owner, epoch, .* FROM partitions/s.test(text)) sent.push(text.trim().slice(0, 40));
    return query(...args);
  };
  return sent;
}

/** The filer's reads of its starts: its poll never reads (held until
 * `release`), and the first told read waits until `release` too. The log
 * says, in order, `told <id>`, `held <ids>`, `read <ids>`. */
function holdFirstToldRead(environment: Environment): { readonly log: string[]; release(): void } {
  const store = environment.store as PostgresStore;
  const log: string[] = [];
  let heldOne = false;
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  // Reaching inside: the fallback poll (a second or more) would settle the
  // Run too, and this test is about the told reads.
  const remote = (environment as unknown as { inbox: { remoteStarts: { poll: () => Promise<boolean> } } }).inbox.remoteStarts;
  remote.poll = async () => {
    await released;
    return false;
  };
  const signals = store.listening;
  store.listen({
    ...signals,
    filedStartMoved: (executionId) => {
      log.push(`told ${executionId ?? "everything"}`);
      signals.filedStartMoved(executionId);
    },
  });
  const readStarts = store.readStarts.bind(store);
  store.readStarts = async (follows) => {
    const ids = follows.map((follow) => follow.executionId).join(",");
    if (!heldOne) {
      heldOne = true;
      log.push(`held ${ids}`);
      await released;
    } else {
      log.push(`read ${ids}`);
    }
    return readStarts(follows);
  };
  return { log, release };
}

/** How a Run ended — or a failure naming what never told it (its poll and
 * first told read are held, so a Run nothing else reads waits for ever). */
function endOf<T>(run: { readonly result: Promise<T> }, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const never = new Promise<T>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the Run never settled: ${what}`)), 20_000);
  });
  return Promise.race([run.result, never]).finally(() => clearTimeout(timer));
}

/** Asks for the refund (approval needed) when the message says "Refund",
 * else answers at once. */
const refundModel = scriptedModel(({ messages }) => {
  const lastUser = [...messages].reverse().find((message) => message.role === "user") as { content: string } | undefined;
  const content = lastUser?.content ?? "";
  if (content.startsWith("Refund") && turnOf(messages) === 0) return { toolCalls: [{ toolName: "refund", input: { orderId: "42" } }] };
  return { text: content.startsWith("Refund") ? "Refunded." : `Noted: ${content}` };
});

function refundTool(calls: string[]) {
  return tool({
    description: "Refunds an order (needs approval)",
    inputSchema: z.object({ orderId: z.string() }),
    needsApproval: () => true,
    async execute({ orderId }, { idempotencyKey }) {
      calls.push(idempotencyKey);
      return { refunded: orderId };
    },
  });
}

describe("a start arriving at a process that does not hold its conversation (PostgreSQL)", () => {
  it("is filed from the tick's view (no take, no holder read) and settled by told reads, a later write read while an earlier read is held", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 1);
    const ownerCalls: RecordedCall[] = [];
    const owner = await openAs(url, "owner");
    owner.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool({ calls: ownerCalls }) } });
    const filer = await openAs(url, "filer");
    const support = filer.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const store = filer.store as PostgresStore;
    expect((owner.store as PostgresStore).heldPartitions().length).toBe(1);
    expect(store.heldPartitions()).toEqual([]);
    // Listening (so releases are heard), and a tick since: the view of
    // the partition table is taken at its word.
    await eventually(
      () => store.answersFromView("customer-1"),
      (yes) => yes,
      "the filer answers from its view",
    );
    const sent = partitionStatements(store);
    const reads = holdFirstToldRead(filer);
    atEnd(async () => reads.release());

    const run = support.conversation("customer-1").start("Where is order 42?");
    const executionId = await run.executionId;
    const result = await endOf(run, "only the first told read could have settled it");
    reads.log.push("settled");
    reads.release();
    expect(result).toMatchObject({ executionId, outcome: "completed", output: "Order 42 has shipped." });
    // Filed on the view's word: neither a take nor a read of the holder.
    expect(sent).toEqual([]);
    // The first told read was still held when the Run settled: later
    // reads, let through while it waited, settled it.
    const settledAt = reads.log.indexOf("settled");
    const firstHeld = reads.log.findIndex((line) => line.startsWith("held") && line.includes(executionId));
    expect(firstHeld).toBeGreaterThanOrEqual(0);
    expect(reads.log.slice(0, settledAt).filter((line) => line.startsWith("read")).length).toBeGreaterThan(0);
    // Run once, by the owner, from the one filing.
    expect(ownerCalls.map((call) => call.idempotencyKey)).toEqual([`${executionId}:call-0-0`, `${executionId}:call-1-0`]);
    const decisions = await withClient((client) => client.query(`SELECT state, filed_by, claimed_by FROM ${schema}.approval_inbox`));
    expect(decisions.rows).toEqual([{ state: "applied", filed_by: "filer", claimed_by: "owner" }]);
  }, 60_000);

  it("the holder lets the partition go: a keyed start sent meanwhile (filed on the view, or taken once the release is heard) runs once, after the suspended execution resumed once and the message queued behind it", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 1);
    const refunds: string[] = [];
    const owner = await openAs(url, "owner");
    owner.agent({ id: "billing", model: refundModel, tools: { refund: refundTool(refunds) } });
    const filer = await openAs(url, "filer");
    const billing = filer.agent({ id: "billing", model: refundModel, tools: { refund: refundTool(refunds) } });
    const store = filer.store as PostgresStore;
    expect(store.heldPartitions()).toEqual([]);

    // At the owner: an execution suspended for approval, a message queued
    // behind it (both sent to the filer, filed for the owner).
    const approval = new Promise<{ executionId: string; approvalId: string }>((resolve) => {
      const run = billing.start("Refund order 42", {
        onEvent: (event) => {
          if (event.type === "approval_required") resolve({ executionId: event.executionId, approvalId: event.request.approvalId });
        },
      });
      run.result.catch(() => undefined);
    });
    const suspended = await approval;
    const queued = billing.start("And order 43", { onBusy: "enqueue" });
    const queuedId = await queued.executionId;
    await eventually(
      () => filer.execution(queuedId),
      (row) => row?.status === "queued",
      "the message is queued at the owner",
    );
    // The owner goes: its partition is released, and told released. A
    // keyed start sent now is filed on the view's word if the release is
    // not heard yet, else the partition is taken on demand and it runs
    // here; sent again once the filer holds the partition, it is the same
    // execution.
    const sent = partitionStatements(store);
    await owner.close();
    const keyed = billing.start("And order 44", { idempotencyKey: "order-44", onBusy: "enqueue" });
    const keyedId = await keyed.executionId;
    console.log(`start-at-any-process: the keyed start was ${sent.length === 0 ? "filed on the view's word" : "taken on demand"}`);
    await eventually(
      () => store.heldPartitions().length,
      (count) => count === 1,
      "the filer takes the partition",
    );
    // Its takeover's recovery reinstalls the suspended execution (a resume
    // sent before that is refused for rehydration, as on any takeover).
    await eventually(
      () => phaseOf(filer, "billing"),
      (phase) => phase === ConversationPhase.Ready,
      "the filer recovered the conversation",
    );
    const resumed = await billing.resume(suspended.executionId, { approvalId: suspended.approvalId, approved: true }).result;
    expect(resumed).toMatchObject({ outcome: "completed", output: "Refunded." });
    expect(await queued.result).toMatchObject({ executionId: queuedId, outcome: "completed", output: "Noted: And order 43" });
    expect(await keyed.result).toMatchObject({ executionId: keyedId, outcome: "completed", output: "Noted: And order 44" });
    const again = await billing.start("And order 44", { idempotencyKey: "order-44", onBusy: "enqueue" }).result;
    expect(again).toMatchObject({ executionId: keyedId, outcome: "completed" });

    // Exactly once: the suspended refund called once; the queued message and
    // the keyed start each one execution; the filing claimed and applied once.
    expect(refunds.length).toBe(1);
    expect(refunds[0]!.startsWith(`${suspended.executionId}:`)).toBe(true);
    const rows = await withClient((client) =>
      client.query<{ execution_id: string; status: string }>(`SELECT execution_id, status FROM ${schema}.executions ORDER BY created_at`),
    );
    expect(rows.rows.map((row) => row.execution_id)).toEqual([suspended.executionId, queuedId, keyedId]);
    const filings = await withClient((client) =>
      client.query<{ state: string }>(`SELECT state FROM ${schema}.approval_inbox WHERE kind = 'start' AND execution_id = $1`, [keyedId]),
    );
    expect(filings.rows.every((row) => row.state === "applied")).toBe(true);
    expect(filings.rows.length).toBeLessThanOrEqual(1);
  }, 60_000);

  it("a process that gives its partitions up tells the others (the released channel): the filer stops answering from its view at once", async () => {
    // A long lease: the filer's next tick is far off.
    const { schema, url } = await freePartitionsSchema(15_000, 1);
    const owner = await PostgresStore.open(url, { instanceId: "owner" });
    atEnd(() => owner.close());
    const filer = await openAs(url, "filer");
    const store = filer.store as PostgresStore;
    expect(owner.heldPartitions().length).toBe(1);
    await eventually(
      () => store.answersFromView("c"),
      (yes) => yes,
      "the filer answers from its view",
    );
    const heard: string[] = [];
    const listener = new pg.Client({ connectionString: postgresUrl });
    await listener.connect();
    atEnd(() => listener.end());
    listener.on("notification", (message) => heard.push(`${message.channel} ${message.payload ?? ""}`));
    await listener.query(`LISTEN "${releasedChannelOf(schema)}"`);
    await owner.close();
    await eventually(
      () => heard.length,
      (count) => count === 1,
      "the release is told",
    );
    expect(heard).toEqual([`${releasedChannelOf(schema)} 0`]);
    await eventually(
      () => store.answersFromView("c"),
      (yes) => !yes,
      "the filer heard the release",
    );
  }, 60_000);

  it("the owner claims a start filed while its claim pass waits for an answer in a second pass at once, and judges an agent's starts in filing order all the same", async () => {
    const { schema, url } = await freePartitionsSchema(leaseMs, 1);
    const owner = await openAs(url, "owner");
    const ownerStore = owner.store as PostgresStore;
    owner.agent({ id: "c", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const filer = await openAs(url, "filer");
    const conversation = filer.agent({ id: "c", model: agentRunModel(), tools: { lookup: lookupTool() } });
    // The owner's claim statements: the first that claims anything has its
    // answer held until `release`.
    const log: string[] = [];
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    atEnd(async () => release());
    let heldOne = false;
    const claimFiledStarts = ownerStore.claimFiledStarts.bind(ownerStore);
    ownerStore.claimFiledStarts = async () => {
      const holding = heldOne;
      const claims = await claimFiledStarts();
      if (claims.length === 0) return claims;
      log.push(`claimed ${claims.map((claim) => claim.executionId).join(",")}`);
      if (!holding && !heldOne) {
        heldOne = true;
        await released;
      }
      return claims;
    };

    const first = conversation.start("first", { onBusy: "enqueue" });
    const firstId = await first.executionId;
    await eventually(
      () => log.length,
      (count) => count === 1,
      "the first start is claimed (its answer held)",
    );
    const second = conversation.start("second", { onBusy: "enqueue" });
    const secondId = await second.executionId;
    // Claimed by another pass while the first pass's answer is held …
    await eventually(
      () => log.includes(`claimed ${secondId}`),
      (yes) => yes,
      "the second start is claimed by a second pass while the first waits",
    );
    expect(log).toEqual([`claimed ${firstId}`, `claimed ${secondId}`]);
    // … and not judged before the first: nothing of it is in the store.
    expect(await filer.execution(secondId)).toBeUndefined();
    release();
    expect(await first.result).toMatchObject({ executionId: firstId, outcome: "completed" });
    expect(await second.result).toMatchObject({ executionId: secondId, outcome: "completed" });
    const rows = await withClient((client) => client.query<{ execution_id: string }>(`SELECT execution_id FROM ${schema}.executions ORDER BY created_at`));
    expect(rows.rows.map((row) => row.execution_id)).toEqual([firstId, secondId]);
    const journal = await filer.store.readJournal("c", 100);
    expect(journal.filter((record) => record.role === "user").map((record) => record.content)).toEqual(["first", "second"]);
  }, 60_000);

  it("the filer reads its starts in one statement: the rows and the steps after each cursor; an execution followed twice is read after the earlier cursor", async () => {
    const { url } = await freePartitionsSchema(leaseMs, 1);
    const environment = await openAs(url, "only");
    const support = environment.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const result = await support.conversation("c").start("Where is order 42?").result;
    const store = environment.store as PostgresStore;
    const all = await store.readStarts([{ executionId: result.executionId, afterSeq: 0 }]);
    const seqs = all[0]!.steps.map((step) => step.seq);
    expect(seqs.length).toBeGreaterThan(2);
    expect(all[0]!.execution).toMatchObject({ executionId: result.executionId, status: "terminal" });
    let statements = 0;
    const query = store.pool.query.bind(store.pool) as (...args: unknown[]) => unknown;
    (store.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      statements += 1;
      return query(...args);
    };
    const twice = await store.readStarts([
      { executionId: result.executionId, afterSeq: seqs[1]! },
      { executionId: result.executionId, afterSeq: seqs[0]! },
      { executionId: "never-filed", afterSeq: 0 },
    ]);
    expect(statements).toBe(1);
    expect(twice.map((progress) => progress.executionId)).toEqual([result.executionId, "never-filed"]);
    expect(twice[0]!.steps.map((step) => step.seq)).toEqual(seqs.slice(1));
    expect(twice[0]!.steps).toEqual(all[0]!.steps.slice(1));
    expect(twice[1]).toMatchObject({ execution: undefined, steps: [], queued: false, decisionState: undefined });
  }, 60_000);

  it("no durable write carries a NOTIFY: the filing and the owner's writes commit first, then tell in a transaction that does not wait for its flush; the filer still hears every write", async () => {
    const { url } = await freePartitionsSchema(leaseMs, 1);
    const owner = await openAs(url, "owner");
    owner.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const filer = await openAs(url, "filer");
    const support = filer.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const store = filer.store as PostgresStore;
    await eventually(
      () => store.answersFromView("customer-1"),
      (yes) => yes,
      "the filer answers from its view",
    );
    // Every statement either process sends, while the start runs.
    const notifying: string[] = [];
    // The payloads the owner's notifying statements carry, before the
    // server folds a transaction's identical notifications into one.
    const payloads: unknown[] = [];
    const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const query = prototype.query;
    prototype.query = function (this: pg.Client, ...args: unknown[]): unknown {
      const sql = typeof args[0] === "string" ? args[0] : String((args[0] as { text?: unknown } | undefined)?.text ?? "");
      if (sql.includes("pg_notify")) {
        notifying.push(sql);
        const values = args[1] as unknown[] | undefined;
        if (Array.isArray(values?.[1])) payloads.push(...values[1]);
      }
      return query.apply(this, args);
    };
    atEnd(async () => {
      prototype.query = query;
    });
    const told: string[] = [];
    const signals = store.listening;
    store.listen({
      ...signals,
      filedStartMoved: (executionId) => {
        if (executionId !== undefined) told.push(executionId);
        signals.filedStartMoved(executionId);
      },
    });
    const run = support.conversation("customer-1").start("Where is order 42?");
    const executionId = await run.executionId;
    expect(await run.result).toMatchObject({ executionId, outcome: "completed" });
    // The preparation, four barriers and the terminal commit: each told.
    // Tells that wait together leave in one statement, and PostgreSQL
    // delivers a transaction's identical notifications once: the filer
    // hears at least one, the owner sent one for every write.
    await eventually(
      () => payloads.filter((payload) => payload === executionId).length,
      (count) => count >= 6,
      "every write of the start is told to the filer",
    );
    await eventually(
      () => told.includes(executionId),
      (heard) => heard,
      "the filer hears its start's writes",
    );
    prototype.query = query;
    // (A settlement's statement names pg_notify for a refused start only,
    // as 0047 left it: this one was applied.)
    const unflushed = notifying.filter((sql) => sql.includes("set_config('synchronous_commit', 'off', true)"));
    expect(unflushed.length).toBeGreaterThan(0);
    for (const sql of unflushed) expect(sql).not.toMatch(/INSERT|UPDATE|prepare_execution|barrier\(|terminal_commit/);
    expect(notifying.filter((sql) => /INSERT INTO approval_inbox|prepare_execution|barrier\(|terminal_commit/.test(sql))).toEqual([]);
  }, 60_000);
});
