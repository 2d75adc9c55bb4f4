// A start filed for the process that holds its conversation (PostgreSQL,
// docs/decisions/0031) keeps `stream: true`: the owner runs it streaming
// and stores it with the execution, so a watcher at the owner gets its
// text deltas and a later recovery or retry streams too
// (docs/decisions/0072; the other paths: test/runtime/stream-kept.test.ts).

import { describe, expect, it } from "vitest";
import { Phronomy, type ExecutionEvent } from "../../host/index.js";
import { deferred, recordingLogger } from "../runtime/helpers.js";
import { streamOnlyModel } from "../support/stream-only-model.js";
import { atEnd, freshSchema, postgresUrl } from "./database.js";

const deltas = ["Order 42 ", "has shipped ", "and arrives ", "on Monday."];

describe("a filed start with stream: true (PostgreSQL)", () => {
  it("is run streaming by the owner, which stores stream: true with the execution", async () => {
    const url = `${postgresUrl}?schema=${freshSchema()}&lease_ms=60000`;
    const gate = deferred();
    const held = deferred();
    const owner = await Phronomy.open({ store: url, logger: recordingLogger() });
    atEnd(() => owner.close());
    owner.agent({ id: "support", model: streamOnlyModel({ deltas, before: 1, gate: gate.promise, onHeld: held.resolve }) });
    await owner.recovery("support");
    const filer = await Phronomy.open({ store: url, logger: recordingLogger() });
    atEnd(() => filer.close());
    const filed = filer.agent({ id: "support", model: streamOnlyModel({ deltas }) });
    await filer.recovery("support");

    const run = filed.start("Where is order 42?", { stream: true });
    const executionId = await run.executionId;
    await held.promise;
    // At the owner, mid-call: a streamed call's text so far, then its deltas.
    const observer = owner.wait(executionId);
    const heard: ExecutionEvent[] = [];
    const listened = (async () => {
      for await (const event of observer.events) heard.push(event);
    })();
    await observer.executionId;
    gate.resolve();
    await listened;
    expect(heard.flatMap((event) => (event.type === "text_delta" ? [event.delta] : []))).toEqual(deltas);
    await expect(run.result).resolves.toMatchObject({ outcome: "completed", output: deltas.join("") });
    expect((await owner.execution(executionId))?.metadata.config).toMatchObject({ stream: true });
  });
});
