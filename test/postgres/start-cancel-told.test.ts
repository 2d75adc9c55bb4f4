// The cancel of a filed start reaches its filer at once (issue 13,
// docs/decisions/0047): a cancel from another process (a third one, or the
// owner) — of a start still filed, or claimed and queued behind a busy
// conversation — tells the filer on its channel in the cancel's own
// statement; the filer's own cancel settles its Run once committed, with
// no notification and no read. The filer's poll is held in these tests:
// only what the cancel told can settle the Run.

import { describe, expect, it } from "vitest";
import { Phronomy, type Environment } from "../../host/index.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import { filerChannelOf, filerChannelSql } from "../../host/store/postgres/inbox.js";
import { agentRunModel, lookupTool, recordingLogger } from "../runtime/helpers.js";
import { atEnd, withClient } from "./database.js";
import { eventually, freePartitionsSchema } from "./fixtures/free-schema.js";
import { quietSignals } from "../../host/store/capabilities.js";

const leaseMs = 1_000;
const start = { input: "hello", options: {} };
const cancellation = JSON.stringify({ code: "CANCELLED", message: "cancelled" });

/** A schema of one partition (every conversation in it), held by nobody. */
const freeSchema = () => freePartitionsSchema(leaseMs, 1);

async function openStore(url: string, instanceId: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(url, { instanceId });
  atEnd(() => store.close());
  return store;
}

/** What the filer's store did, in order: `told <id>` (a notification),
 * `read <ids>` (a read let through), `held <ids>` (a read held: the
 * poll's, or of a start nobody told it about). Reads of starts not told
 * wait until `release` (called before the environment closes). */
function holdUntoldReads(store: PostgresStore): { readonly log: string[]; release(): void } {
  const log: string[] = [];
  const told = new Set<string>();
  let everything = false;
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const signals = store.listening;
  store.listen({
    ...signals,
    filedStartMoved: (executionId) => {
      log.push(`told ${executionId ?? "everything"}`);
      if (executionId === undefined) everything = true;
      else told.add(executionId);
      signals.filedStartMoved(executionId);
    },
  });
  const readStarts = store.readStarts.bind(store);
  store.readStarts = async (follows) => {
    const ids = follows.map((follow) => follow.executionId).join(",");
    if (everything || follows.every((follow) => told.has(follow.executionId))) {
      everything = false;
      log.push(`read ${ids}`);
    } else {
      log.push(`held ${ids}`);
      await released;
    }
    return readStarts(follows);
  };
  return { log, release };
}

/** How a Run ended — or a failure naming what never told it (its poll is
 * held, so a Run nothing told waits for ever). */
function endOf(run: { readonly result: Promise<unknown> }, what: string): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const never = new Promise<string>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the Run never settled: ${what}`)), 20_000);
  });
  const ended = run.result.then(
    () => "completed",
    (error: { code?: string }) => error.code ?? "?",
  );
  return Promise.race([ended, never]).finally(() => clearTimeout(timer));
}

async function openAs(url: string, instanceId: string): Promise<Environment> {
  const environment = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId } });
  atEnd(() => environment.close());
  return environment;
}

describe("the cancel of a filed start reaches its filer at once (PostgreSQL)", () => {
  it("the filer's channel computed by the database is the one the filer listens on", async () => {
    const pairs = [
      ["phronomy", "filer"],
      ["s_0f3a", "host-1:4242:9b1c"],
      ["Schéma", "instance ü/≠"],
    ] as const;
    const computed = await withClient((client) =>
      client.query<{ channel: string }>(
        `SELECT ${filerChannelSql("pair.schema", "pair.filed_by")} AS channel FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS pair(schema, filed_by, position) ORDER BY position`,
        [pairs.map(([schema]) => schema), pairs.map(([, filedBy]) => filedBy)],
      ),
    );
    expect(computed.rows.map((row) => row.channel)).toEqual(pairs.map(([schema, filedBy]) => filerChannelOf(schema, filedBy)));
  });

  it("the store: a cancel by another process (of a start still filed, or claimed and queued) is heard by the filer; its own cancel is not sent to it", async () => {
    const { url } = await freeSchema();
    const owner = await openStore(url, "owner");
    const filer = await openStore(url, "filer");
    const third = await openStore(url, "third");
    const heard: string[] = [];
    filer.listen({
      ...quietSignals,
      filedStartMoved: (executionId) => {
        if (executionId !== undefined) heard.push(executionId);
      },
    });
    filer.listenForDecisions();
    await eventually(
      () => filer.hearsFiledStarts,
      (up) => up,
      "the filer listens",
    );
    expect((await owner.acquireLease("c")).acquired).toBe(true);

    // Still filed: cancelled by a third process, then by the owner.
    await filer.fileStart({ decisionId: "d-1", executionId: "e-1", agentId: "c", start, filedAt: 1 });
    expect(await third.cancelFiledStart("e-1", cancellation, 2)).toEqual({ agentId: "c", state: "cancelled" });
    await eventually(
      () => heard.length,
      (count) => count === 1,
      "the third process's cancel is heard",
    );
    await filer.fileStart({ decisionId: "d-2", executionId: "e-2", agentId: "c", start, filedAt: 3 });
    expect(await owner.cancelFiledStart("e-2", cancellation, 4)).toEqual({ agentId: "c", state: "cancelled" });
    await eventually(
      () => heard.length,
      (count) => count === 2,
      "the owner's cancel is heard",
    );

    // Claimed and queued behind the conversation's running execution: its
    // cancel (a terminal row written by the third process) is heard.
    await filer.fileStart({ decisionId: "d-3", executionId: "e-3", agentId: "c", start, filedAt: 5 });
    const [claim] = await owner.claimFiledStarts();
    expect(claim).toMatchObject({ executionId: "e-3" });
    await owner.enqueueMessage({ executionId: "e-3", agentId: "c", input: "hello", config: {}, at: 6, limit: 10, front: false });
    expect(await third.cancelQueued({ executionId: "e-3", error: { code: "CANCELLED", message: "cancelled" }, at: 7 })).toEqual({ cancelled: true });
    await eventually(
      () => heard.length,
      (count) => count === 3,
      "the cancel of the queued start is heard",
    );

    // The filer's own cancels: nothing sent to it. The owner's refusal of
    // a later start is heard after them (notifications arrive in commit
    // order), so nothing of theirs is still on its way.
    await filer.fileStart({ decisionId: "d-4", executionId: "e-4", agentId: "c", start, filedAt: 8 });
    expect(await filer.cancelFiledStart("e-4", cancellation, 9)).toEqual({ agentId: "c", state: "cancelled" });
    await filer.fileStart({ decisionId: "d-5", executionId: "e-5", agentId: "c", start, filedAt: 10 });
    await owner.claimFiledStarts();
    await owner.enqueueMessage({ executionId: "e-5", agentId: "c", input: "hello", config: {}, at: 11, limit: 10, front: false });
    expect(await filer.cancelQueued({ executionId: "e-5", error: { code: "CANCELLED", message: "cancelled" }, at: 12 })).toEqual({ cancelled: true });
    await filer.fileStart({ decisionId: "d-6", executionId: "e-6", agentId: "c", start, filedAt: 13 });
    const [refused] = await owner.claimFiledStarts();
    expect(await owner.settleDecision(refused!, { applied: false, error: { code: "AGENT_BUSY", message: "busy" } })).toBe(true);
    await eventually(
      () => heard.length,
      (count) => count === 4,
      "the refusal is heard",
    );
    expect(heard).toEqual(["e-1", "e-2", "e-3", "e-6"]);
    // A queued message nobody filed: its cancel tells nobody.
    await owner.enqueueMessage({ executionId: "local", agentId: "c", input: "hello", config: {}, at: 14, limit: 10, front: false });
    expect(await owner.cancelQueued({ executionId: "local", error: { code: "CANCELLED", message: "cancelled" }, at: 15 })).toEqual({ cancelled: true });
  });

  it("env.cancel of a start still filed, from a third process: the filer's Run settles CANCELLED through the told read, its poll held; from the filer itself: settled with no read at all", async () => {
    const { schema, url } = await freeSchema();
    // A holder that never claims anything (alive as far as the rows say).
    await withClient((client) =>
      client.query(`UPDATE ${schema}.partitions SET owner = 'elsewhere', epoch = 1, expires_at = clock_timestamp() + interval '1 hour'`),
    );
    const sender = await openAs(url, "sender");
    const third = await openAs(url, "third");
    const store = sender.store as PostgresStore;
    await eventually(
      () => store.hearsFiledStarts,
      (up) => up,
      "the sender listens",
    );
    const reads = holdUntoldReads(store);
    atEnd(async () => reads.release());
    const support = sender.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });

    const run = support.conversation("c").start("Where is order 42?");
    const executionId = await run.executionId;
    const ended = endOf(run, "the third process's cancel was not told to the filer");
    reads.log.push("cancel");
    expect(await third.cancel(executionId, { reason: "from elsewhere" })).toMatchObject({ executionId, outcome: "cancelled" });
    expect(await ended).toBe("CANCELLED");
    reads.log.push("settled");
    const afterCancel = reads.log.slice(reads.log.indexOf("cancel"));
    // Told, then read (that read alone let through): what settled the Run.
    expect(afterCancel.filter((line) => !line.startsWith("held"))).toEqual(["cancel", `told ${executionId}`, `read ${executionId}`, "settled"]);

    const own = support.conversation("c2").start("And order 43?");
    const ownId = await own.executionId;
    const order: string[] = [];
    const ownSettled = own.result.then(
      () => order.push("completed"),
      (error: { code?: string }) => order.push(`run ${error.code ?? "?"}`),
    );
    reads.log.push("own cancel");
    const answer = await sender.cancel(ownId, { reason: "not needed" });
    order.push(`cancel answered ${answer.outcome}`);
    await endOf({ result: ownSettled }, "the filer's own cancel did not settle its Run");
    // Settled before env.cancel answered, by no read and no notification.
    expect(order).toEqual(["run CANCELLED", "cancel answered cancelled"]);
    expect(reads.log.slice(reads.log.indexOf("own cancel")).filter((line) => !line.startsWith("held"))).toEqual(["own cancel"]);
    reads.release();
  }, 60_000);

  it("env.cancel of a start still filed, from a process that takes no share (balance: false, as the CLI opens): cancelled, and the filer's Run settles CANCELLED", async () => {
    const { schema, url } = await freeSchema();
    await withClient((client) =>
      client.query(`UPDATE ${schema}.partitions SET owner = 'elsewhere', epoch = 1, expires_at = clock_timestamp() + interval '1 hour'`),
    );
    const sender = await openAs(url, "sender");
    const command = await Phronomy.open({ store: url, logger: recordingLogger(), postgres: { instanceId: "command", balance: false } });
    atEnd(() => command.close());
    const support = sender.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });
    const run = support.conversation("c").start("Where is order 42?");
    const executionId = await run.executionId;
    expect(await command.cancel(executionId, { reason: "from the command line" })).toMatchObject({ executionId, outcome: "cancelled" });
    expect(await endOf(run, "the command's cancel did not reach the filer")).toBe("CANCELLED");
  }, 60_000);

  it("env.cancel of a filed start its owner queued behind a running one: from the owner, the filer's Run settles CANCELLED through the told read, its poll held; from the filer itself, with no read at all", async () => {
    const { url } = await freeSchema();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const owner = await openAs(url, "owner");
    atEnd(async () => release());
    const busy = owner
      .agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool({ gate }) }, onBusy: "enqueue" })
      .conversation("c")
      .start("first");
    busy.result.catch(() => undefined);
    const busyId = await busy.executionId;
    const sender = await openAs(url, "sender");
    const store = sender.store as PostgresStore;
    await eventually(
      () => store.hearsFiledStarts,
      (up) => up,
      "the sender listens",
    );
    const reads = holdUntoldReads(store);
    atEnd(async () => reads.release());
    while ((await sender.execution(busyId))?.status !== "active") await new Promise((resolve) => setTimeout(resolve, 20));
    const support = sender.agent({ name: "support", model: agentRunModel(), tools: { lookup: lookupTool() } });

    const queued = support.conversation("c").start("second", { onBusy: "enqueue" });
    const queuedId = await queued.executionId;
    const ended = endOf(queued, "the owner's cancel of the queued start was not told to the filer");
    await eventually(
      () => sender.execution(queuedId),
      (row) => (row?.status as string | undefined) === "queued",
      "the owner queues the filed start",
    );
    reads.log.push("cancel");
    expect(await owner.cancel(queuedId, { reason: "changed my mind" })).toMatchObject({ executionId: queuedId, outcome: "cancelled" });
    expect(await ended).toBe("CANCELLED");
    reads.log.push("settled");
    expect(reads.log.slice(reads.log.indexOf("cancel")).filter((line) => !line.startsWith("held"))).toEqual([
      "cancel",
      `told ${queuedId}`,
      `read ${queuedId}`,
      "settled",
    ]);

    // Queued again, cancelled by the filer itself: settled before
    // env.cancel answered, by no read and no notification.
    const own = support.conversation("c").start("third", { onBusy: "enqueue" });
    const ownId = await own.executionId;
    const order: string[] = [];
    const ownSettled = own.result.then(
      () => order.push("completed"),
      (error: { code?: string }) => order.push(`run ${error.code ?? "?"}`),
    );
    await eventually(
      () => sender.execution(ownId),
      (row) => (row?.status as string | undefined) === "queued",
      "the owner queues the second filed start",
    );
    reads.log.push("own cancel");
    const answer = await sender.cancel(ownId, { reason: "not needed" });
    order.push(`cancel answered ${answer.outcome}`);
    await endOf({ result: ownSettled }, "the filer's own cancel of its queued start did not settle its Run");
    expect(order).toEqual(["run CANCELLED", "cancel answered cancelled"]);
    expect(reads.log.slice(reads.log.indexOf("own cancel")).filter((line) => !line.startsWith("held"))).toEqual(["own cancel"]);
    reads.release();
    release();
    expect(await busy.result).toMatchObject({ outcome: "completed" });
  }, 60_000);
});
