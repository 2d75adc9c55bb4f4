// Recovering, in the same core, an execution that was marked for recovery
// while its session still had operations in flight: the continuation waits
// until every abandoned operation settled (NotQuiescent), then applies.

import { expect } from "vitest";
import { CommitOutcome, Continuation, EffectKind, MessageKind, Phase, ResultCode, SessionEventKind } from "../../assembly/abi.js";
import { describeDecisions, effect } from "./driver.js";

describeDecisions("ContinueRecovered of an execution marked for recovery in this core", ({ boot, it }) => {
  it("is refused NotQuiescent (nothing changes) until the abandoned operations settled", async () => {
    const core = await boot();
    // A model call in flight, then the tool barrier lost its race.
    const run = core.callingModel().event(SessionEventKind.LlmCompletedWithTools);
    core.step(MessageKind.ToolDispatchReady, run.exec, run.generation, run.session, run.revision, CommitOutcome.RehydrationRequired, 0, 0);
    const marked = core.executionRecord(run.exec);
    expect(marked).toMatchObject({ session: 0, inFlight: 1, phase: Phase.DispatchingTools });
    const request = core.request();
    expect(core.apply(MessageKind.ContinueRecovered, run.exec, run.generation, marked.revision, Continuation.FrameworkTools, 1, request)).toBe(
      ResultCode.NotQuiescent,
    );
    expect(core.effects()).toEqual([effect.FailRequest(request, ResultCode.NotQuiescent)]);
    expect(core.executionRecord(run.exec)).toEqual(marked);
    // The abandoned barrier's operation settles; now recovery may continue.
    expect(core.apply(MessageKind.OperationSettled, run.exec, run.generation)).toBe(ResultCode.Ok);
    const next = core.request();
    expect(core.apply(MessageKind.ContinueRecovered, run.exec, run.generation, marked.revision, Continuation.FrameworkTools, 1, next)).toBe(ResultCode.Ok);
    const continued = core.effects();
    expect(continued.map((item) => item.kind)).toEqual([EffectKind.RegisterWaiter, EffectKind.ContinueSession, EffectKind.SubmitToolBarrier]);
    expect(core.executionRecord(run.exec)).toMatchObject({ inFlight: 1, phase: Phase.DispatchingTools });
  });
});
