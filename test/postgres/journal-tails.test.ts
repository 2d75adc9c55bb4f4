// The journal tails the PostgreSQL store keeps for the agents it holds
// (host/store/postgres/journal-tails.ts): served only under the lease epoch
// they were read or written under, never after another process wrote the
// journal; a read that raced an append is not kept; bounded.

import { describe, expect, it } from "vitest";
import { JournalTails } from "../../host/store/postgres/journal-tails.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import type { JournalRecord } from "../../host/store/records.js";
import { prepare, terminalCommit } from "../store/fixtures.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "./database.js";

const record = (executionId: string, content: string): JournalRecord => ({ executionId, role: "user", content, at: 1 });

describe("JournalTails", () => {
  it("serves the last records under the epoch they were kept under, appends in order, trims to the window", () => {
    const tails = new JournalTails();
    expect(tails.read("a", 1, 2)).toBeUndefined();
    tails.remember("a", 1, 2, [record("e1", "one"), record("e2", "two")], tails.version("a"));
    expect(tails.read("a", 1, 2)?.map((item) => item.content)).toEqual(["one", "two"]);
    tails.append("a", 1, [record("e3", "three")]);
    expect(tails.read("a", 1, 2)?.map((item) => item.content)).toEqual(["two", "three"]);
    // A larger window than kept (and the journal may hold more): not served.
    expect(tails.read("a", 1, 5)).toBeUndefined();
    // Another epoch: dropped, not served.
    expect(tails.read("a", 2, 1)).toBeUndefined();
    expect(tails.read("a", 1, 1)).toBeUndefined();
  });

  it("a journal shorter than the window asked for is complete: larger windows are served too", () => {
    const tails = new JournalTails();
    tails.remember("a", 1, 20, [record("e1", "one")], tails.version("a"));
    expect(tails.read("a", 1, 50)?.map((item) => item.content)).toEqual(["one"]);
    tails.append("a", 1, [record("e2", "two")]);
    expect(tails.read("a", 1, 50)?.map((item) => item.content)).toEqual(["one", "two"]);
  });

  it("a read that raced an append or a drop is not kept; appends under another epoch drop the tail", () => {
    const tails = new JournalTails();
    const version = tails.version("a");
    tails.append("a", 1, [record("e1", "written meanwhile")]);
    tails.remember("a", 1, 5, [], version);
    expect(tails.read("a", 1, 5)).toBeUndefined();
    tails.remember("a", 1, 5, [record("e1", "x")], tails.version("a"));
    tails.append("a", 2, [record("e2", "y")]);
    expect(tails.read("a", 1, 1)).toBeUndefined();
  });

  it("keeps at most agentsMax agents, the least recently used dropped", () => {
    const tails = new JournalTails(2);
    for (const agent of ["a", "b"]) tails.remember(agent, 1, 5, [], tails.version(agent));
    expect(tails.read("a", 1, 5)).toEqual([]);
    tails.remember("c", 1, 5, [], tails.version("c"));
    expect(tails.read("b", 1, 5)).toBeUndefined();
    expect(tails.read("a", 1, 5)).toEqual([]);
    expect(tails.read("c", 1, 5)).toEqual([]);
  });
});

describe("journal tails of a PostgresStore", () => {
  it("after another process wrote the agent's journal under its own lease, the first one's memory is never served again", async () => {
    const schema = freshSchema();
    const url = `${postgresUrl}?schema=${schema}&lease_ms=60000`;
    // One partition: the agent's is the only one (docs/decisions/0030).
    const first = await PostgresStore.open(url, { partitions: 1 });
    atEnd(() => first.close());
    await first.ensureAgent("support", 1);
    await first.acquireLease("support");
    await first.run(prepare("e1", "support", { journal: [record("e1", "from the first process")] }));
    expect((await first.readJournal("support", 5)).map((item) => item.content)).toEqual(["from the first process"]);
    await first.run(terminalCommit("e1", 1, { journal: [{ executionId: "e1", role: "assistant", content: "answered", at: 2 }] }));
    expect((await first.readJournal("support", 5)).map((item) => item.content)).toEqual(["from the first process", "answered"]);

    // The first process stalls; its lease expires and a second takes the agent over and writes.
    await withClient((client) => client.query(`UPDATE ${schema}.partitions SET expires_at = clock_timestamp() - interval '1 second'`));
    const second = await PostgresStore.open(url);
    atEnd(() => second.close());
    expect(await second.acquireLease("support")).toMatchObject({ acquired: true, epoch: 2 });
    await second.run(prepare("e2", "support", { journal: [record("e2", "from the second process")] }));
    await second.close();

    // The first's view is stale (its lease is long): its next write is
    // refused by the fence, which tells it the partition is lost; it takes
    // it back (epoch 3) and reads what the second wrote.
    expect(await first.run(prepare("e3", "support"))).toMatchObject({ outcome: "not_established", error: { code: "AGENT_BUSY" } });
    expect(await first.acquireLease("support")).toMatchObject({ acquired: true, epoch: 3 });
    expect((await first.readJournal("support", 5)).map((item) => item.content)).toEqual(["from the first process", "answered", "from the second process"]);
  });
});

describe("journal tails after a preparation that replaces memory (docs/decisions/0070)", () => {
  it("the tail kept under the lease is dropped by the cut: the next read sees the journal as cut, then appends go on", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(`${postgresUrl}?schema=${schema}&lease_ms=60000`, { partitions: 1 });
    atEnd(() => store.close());
    await store.ensureAgent("support", 1);
    await store.acquireLease("support");
    for (const id of ["e1", "e2"]) {
      await store.run(prepare(id, "support", { journal: [record(id, `${id} asks`)] }));
      await store.run(terminalCommit(id, 1, { journal: [{ executionId: id, role: "assistant", content: `${id} answers`, at: 2 }] }));
    }
    // Read twice: the second read is served from the tail kept in memory.
    await store.readJournal("support", 10);
    expect((await store.readJournal("support", 10)).map((item) => item.content)).toEqual(["e1 asks", "e1 answers", "e2 asks", "e2 answers"]);
    await store.run(prepare("e3", "support", { replaceFrom: "e2", journal: [record("e3", "e3 asks")] }));
    expect((await store.readJournal("support", 10)).map((item) => item.content)).toEqual(["e1 asks", "e1 answers", "e3 asks"]);
    await store.run(terminalCommit("e3", 1, { journal: [{ executionId: "e3", role: "assistant", content: "e3 answers", at: 3 }] }));
    expect((await store.readJournal("support", 10)).map((item) => item.content)).toEqual(["e1 asks", "e1 answers", "e3 asks", "e3 answers"]);
  });
});

describe("journal reads in batches (docs/decisions/0042)", () => {
  it("reads asked for at once leave as one statement, each agent answered with its own last records and its own window", async () => {
    const schema = freshSchema();
    const url = `${postgresUrl}?schema=${schema}&lease_ms=60000`;
    const writer = await PostgresStore.open(url, { partitions: 4, instanceId: "writer" });
    atEnd(() => writer.close());
    const agents = ["a", "b", "c", "quiet"];
    for (const agentId of agents) {
      await writer.ensureAgent(agentId, 1);
      await writer.acquireLease(agentId);
    }
    for (const [index, agentId] of ["a", "b", "c"].entries()) {
      for (let turn = 0; turn <= index + 1; turn += 1) {
        const executionId = `${agentId}-${turn}`;
        await writer.run(prepare(executionId, agentId, { journal: [record(executionId, `${agentId} says ${turn}`)] }));
        await writer.run(terminalCommit(executionId, 1, { journal: [] }));
      }
    }
    await writer.close();

    // A fresh process keeps no tails: every read goes to the database.
    const reader = await PostgresStore.open(url, { partitions: 4, instanceId: "reader" });
    atEnd(() => reader.close());
    for (const agentId of agents) await reader.acquireLease(agentId);
    const figures = (reader as unknown as { journalReads: { figures: { statements: number; questions: number } } }).journalReads.figures;
    const answers = await Promise.all([
      reader.readJournal("a", 5),
      reader.readJournal("b", 2),
      reader.readJournal("c", 3),
      reader.readJournal("quiet", 5),
      reader.readJournal("c", 1),
    ]);
    expect(answers.map((records) => records.map((item) => item.content))).toEqual([
      ["a says 0", "a says 1"],
      ["b says 1", "b says 2"],
      ["c says 1", "c says 2", "c says 3"],
      [],
      ["c says 3"],
    ]);
    expect(figures).toEqual({ statements: 1, questions: 5 });
  });
});
