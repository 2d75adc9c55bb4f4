// Answering every kind of wait from the command line (decision 0075):
// `phronomy resume --value` gives a typed wait its value (a value its
// schema refuses fails the command and leaves the wait pending; an
// approve on a typed wait is refused with the command that answers it);
// `approve --input` runs the call with edited arguments, `--respond`
// answers in place of the tool, `--by` is recorded; `ls` and `show` tell
// a wait for input from an approval and show its question and schema.

import { describe, expect, it } from "vitest";
import { cli, describeResult, errorLines, fixture, jsonOf, temporaryStore } from "./helpers.js";

const bookingModule = fixture("booking-agent.ts");

async function suspendedRun(
  store: string,
  input: string,
): Promise<{ executionId: string; approval: { approvalId: string; kind: string; responseSchema?: unknown } }> {
  const run = await cli(["run", bookingModule, input, "--store", store, "--json"]);
  expect(run.code, describeResult(run)).toBe(3);
  return jsonOf(run);
}

describe("phronomy answers waits", () => {
  it("a typed wait: ls and show say it waits for input with its question and schema; a refused value changes nothing; resume --value completes it", async () => {
    const store = await temporaryStore();
    const pending = await suspendedRun(store, "When can you deliver?");
    expect(pending.approval).toMatchObject({ kind: "input", responseSchema: { type: "object", properties: { date: { type: "string" } } } });
    const { executionId } = pending;

    const listed = await cli(["ls", "--store", store]);
    expect(listed.stdout).toContain("waiting for input");
    const shown = await cli(["show", executionId, "--store", store]);
    expect(shown.code, describeResult(shown)).toBe(0);
    expect(shown.stdout).toContain(`input · wait id ${pending.approval.approvalId}`);
    expect(shown.stdout).toContain('asks askDeliveryDate({"question":"Which day suits you?"})');
    expect(shown.stdout).toContain('"date":{"type":"string"');
    expect(shown.stdout).toContain(`phronomy resume ${executionId}`);

    const approveInstead = await cli(["approve", executionId, "--agent-module", bookingModule, "--store", store]);
    expect(approveInstead.code, describeResult(approveInstead)).toBe(1);
    expect(errorLines(approveInstead)).toEqual([expect.stringContaining("[APPROVAL_MISMATCH]")]);
    expect(errorLines(approveInstead)[0]).toContain(`phronomy resume ${executionId} --value`);

    const refused = await cli(["resume", executionId, "--value", '{"date":"next week"}', "--agent-module", bookingModule, "--store", store]);
    expect(refused.code, describeResult(refused)).toBe(1);
    expect(errorLines(refused)).toEqual([expect.stringContaining("[INVALID_INPUT]")]);
    expect(errorLines(refused)[0]).toContain("a date as YYYY-MM-DD");
    const notJson = await cli(["resume", executionId, "--value", "{date:", "--agent-module", bookingModule, "--store", store]);
    expect(notJson.code).toBe(2);
    expect(errorLines(notJson)[0]).toContain("--value must be JSON");
    expect(jsonOf(await cli(["show", executionId, "--store", store, "--json"])).execution).toMatchObject({ status: "suspended" });

    const answered = await cli([
      "resume",
      executionId.slice(0, 8),
      "--value",
      '{"date":"2027-03-01"}',
      "--by",
      "ana@support",
      "--agent-module",
      bookingModule,
      "--store",
      store,
      "--json",
    ]);
    expect(answered.code, describeResult(answered)).toBe(0);
    expect(jsonOf(answered)).toMatchObject({ executionId, outcome: "completed", output: 'Done: {"date":"2027-03-01"}' });
    const timeline = await cli(["show", executionId, "--store", store]);
    expect(timeline.stdout).toContain('answered {"date":"2027-03-01"} · by "ana@support"');

    const twice = await cli(["resume", executionId, "--value", '{"date":"2027-03-02"}', "--agent-module", bookingModule, "--store", store]);
    expect(twice.code).toBe(1);
    expect(errorLines(twice)).toEqual([expect.stringContaining("[NOT_WAITING_FOR_APPROVAL]")]);
  });

  it("approve --input runs the call with edited arguments (a refused edit changes nothing); --respond answers in place of the tool", async () => {
    const store = await temporaryStore();
    const edited = await suspendedRun(store, "Refund order 42");
    expect(edited.approval.kind).toBe("approval");
    const shown = await cli(["show", edited.executionId, "--store", store]);
    expect(shown.stdout).toContain("waiting for approval");
    expect(shown.stdout).toContain('refund({"orderId":"42","amount":80}) · call ');

    const tooMuch = await cli(["approve", edited.executionId, "--input", '{"orderId":"42","amount":500}', "--agent-module", bookingModule, "--store", store]);
    expect(tooMuch.code, describeResult(tooMuch)).toBe(1);
    expect(errorLines(tooMuch)).toEqual([expect.stringContaining("[INVALID_INPUT]")]);
    const valueInstead = await cli(["approve", edited.executionId, "--value", "1", "--store", store]);
    expect(valueInstead.code).toBe(2);

    const approved = await cli([
      "approve",
      edited.executionId,
      "--input",
      '{"orderId":"42","amount":30}',
      "--by",
      "ana@support",
      "--reason",
      "partial refund",
      "--agent-module",
      bookingModule,
      "--store",
      store,
      "--json",
    ]);
    expect(approved.code, describeResult(approved)).toBe(0);
    expect(jsonOf(approved)).toMatchObject({ outcome: "completed", output: 'Done: {"orderId":"42","refunded":30,"by":"the tool"}' });
    const timeline = await cli(["show", edited.executionId, "--store", store]);
    expect(timeline.stdout).toMatch(/approved with input \{"orderId":"42","amount":30\} for call \S+ · by "ana@support" · reason "partial refund"/);

    const responded = await suspendedRun(store, "Refund order 42");
    const done = await cli([
      "approve",
      responded.executionId,
      "--respond",
      '{"refunded":0,"note":"store credit"}',
      "--agent-module",
      bookingModule,
      "--store",
      store,
      "--json",
    ]);
    expect(done.code, describeResult(done)).toBe(0);
    expect(jsonOf(done)).toMatchObject({ outcome: "completed", output: 'Done: {"refunded":0,"note":"store credit"}' });
  });
});
