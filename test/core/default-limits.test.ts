// The default limits (assembly/abi.ts `Limit`, docs/decisions/0066): an
// application with a million conversations waiting for approval — each its
// own agent slot and its own live execution — is never refused CAPACITY,
// and the core's linear memory grows with the executions it holds, not
// with the limits. The wasm core only: the defaults are its constants (the
// reference model is always given its limits).

import { describe, expect, it } from "vitest";
import { EffectKind, ExecutionRecord, ExecutionStatus, Limit, MessageKind, Phase, ResultCode } from "../../assembly/abi.js";
import { ControlCore, DEFAULT_CORE_LIMITS } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";

/** More than a million, and past 2^20 (the old execution default). */
const CONVERSATIONS = 2 ** 20 + 1;

describe("default limits", () => {
  it("are at least four times a million conversations, below their ceilings", () => {
    expect(DEFAULT_CORE_LIMITS.agentsMax).toBeGreaterThanOrEqual(4_000_000);
    expect(DEFAULT_CORE_LIMITS.executionsMax).toBeGreaterThanOrEqual(4_000_000);
    expect(DEFAULT_CORE_LIMITS.agentsMax).toBeLessThanOrEqual(Limit.AgentsMaxCeiling);
    expect(DEFAULT_CORE_LIMITS.executionsMax).toBeLessThanOrEqual(Limit.ExecutionsMaxCeiling);
  });

  it(`hold ${CONVERSATIONS} suspended conversations, each its own agent slot and execution`, async () => {
    const core = new ControlCore(await loadCoreModule("release"), DEFAULT_CORE_LIMITS);
    const memoryAtInit = core.memoryBytes;
    // One expect at the end: a million of them would be the test's cost.
    const refused: Array<{ index: number; code: number }> = [];
    for (let index = 0; index < CONVERSATIONS && refused.length === 0; index += 1) {
      const registered = core.apply(MessageKind.RegisterAgent, 0);
      if (registered !== ResultCode.Ok || core.effectWord(0, 0) !== EffectKind.AgentRegistered) {
        refused.push({ index, code: registered });
        break;
      }
      const code = core.apply(
        MessageKind.RecoveryInstall,
        core.effectWord(0, 1),
        core.effectWord(0, 2),
        10,
        ExecutionStatus.Suspended,
        Phase.Suspended,
        0,
        index + 1,
      );
      if (code !== ResultCode.Ok) refused.push({ index, code });
    }
    expect(refused).toEqual([]);
    expect(core.liveExecutions).toBe(CONVERSATIONS);
    // The tables for the limits were laid out at init; the execution table
    // then doubled as executions came: 2^21 slots of 20 bytes now, not the
    // 4 million of the limit.
    const executionTable = (2 ** 21 - 1024) * ExecutionRecord.Size;
    expect(core.memoryBytes).toBeLessThanOrEqual(memoryAtInit + executionTable + 65_536);
  }, 120_000);
});
