// A filed start's fate in the inbox follows the core's last `Admit` verdict
// on it (the core's `filedStartVerdict`, host/runtime/filed-start-fate.ts), not the class of the error its
// Run was refused with: `LeaveFiled` leaves it for the process that holds
// the conversation whatever the error says; a refusal the core decided
// (held, busy, closed, no queue) is recorded; only the store's answer to
// the write (a failure, its lease check) is tried again by the inbox.

import { beforeAll, describe, expect, it } from "vitest";
import { AdmissionVerdict } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { AgentBusyError, CoreFailureError, InvalidInputError, PhronomyError, RuntimeShutdownError } from "../../host/errors.js";
import { fateOfRefused } from "../../host/runtime/filed-start-fate.js";

const storeFailed = new PhronomyError("STORE", "the database went away");
const leaseRefused = new PhronomyError("AGENT_BUSY", 'agent "c" is not owned by this process', { agentId: "c", details: { reason: "lease_not_held" } });
const busy = new AgentBusyError("c");
const never = (): Promise<boolean> => Promise.resolve(false);

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

describe("the fate of a filed start, from the core's verdict", () => {
  it("LeaveFiled: left for the owner, whatever its error says", async () => {
    for (const error of [AgentBusyError.ownedElsewhere("c"), storeFailed, busy]) {
      expect(await fateOfRefused(core, error, AdmissionVerdict.LeaveFiled, never)).toEqual({ kind: "left" });
    }
  });

  it("refusals the core decided are recorded: held for recovery, busy (not by its own id), closed, no queue", async () => {
    const held = AgentBusyError.heldForRecovery("c");
    expect(await fateOfRefused(core, held, AdmissionVerdict.RefuseHeld, never)).toEqual({ kind: "refused", error: held });
    expect(await fateOfRefused(core, busy, AdmissionVerdict.RefuseBusy, never)).toEqual({ kind: "refused", error: busy });
    const closed = new PhronomyError("AGENT_CLOSED", "closed", { agentId: "c" });
    expect(await fateOfRefused(core, closed, AdmissionVerdict.RefuseClosed, never)).toEqual({ kind: "refused", error: closed });
    const invalid = new InvalidInputError("bad input");
    expect(await fateOfRefused(core, invalid, undefined, never)).toEqual({ kind: "refused", error: invalid });
  });

  it("busy by the admission of its own execution id, or that id in the store already: it runs", async () => {
    expect(await fateOfRefused(core, busy, AdmissionVerdict.RefuseBusy, () => Promise.resolve(true))).toEqual({ kind: "ran" });
    const exists = new InvalidInputError("exists", { details: { reason: "execution_exists" } });
    expect(await fateOfRefused(core, exists, AdmissionVerdict.RunHere, never)).toEqual({ kind: "ran" });
  });

  it("the store's answer to the write the core let run (a failure, its lease check) is tried again; shutdown and a core failure leave it", async () => {
    expect(await fateOfRefused(core, storeFailed, AdmissionVerdict.RunHere, never)).toEqual({ kind: "write_failed", error: storeFailed });
    expect(await fateOfRefused(core, leaseRefused, AdmissionVerdict.RunHere, never)).toEqual({ kind: "write_failed", error: leaseRefused });
    expect(await fateOfRefused(core, new RuntimeShutdownError("a start"), AdmissionVerdict.WaitUntilReady, never)).toEqual({ kind: "left" });
    expect(await fateOfRefused(core, new CoreFailureError("Admit", new Error("trapped")), AdmissionVerdict.RunHere, never)).toEqual({ kind: "left" });
  });
});
