// The FSM table, walked pair by pair: the compiled table against the table
// docs/core.md specifies, every pair applied through `SessionEvent` /
// `SessionFinished` on a live execution in that phase, and docs/fsm.md
// against the document the compiled table renders.

import { readFile } from "node:fs/promises";
import { beforeAll, describe, expect, it } from "vitest";
import {
  CommitOutcome,
  EffectKind,
  MessageKind as M,
  OutcomeType,
  Phase,
  PhaseLimit,
  PreparationOutcome,
  ResultCode,
  SessionEnding,
  SessionEventKind as E,
  SessionEventLimit,
} from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { renderFsmDocument } from "../../scripts/fsm-document.js";

/** The table of docs/core.md, written out independently of assembly/fsm.ts. */
const SPECIFIED: Record<number, Record<number, number>> = {
  [Phase.CallingLlm]: { [E.LlmCompletedWithTools]: Phase.DispatchingTools, [E.ApprovalRequired]: Phase.Suspended, [E.Finish]: Phase.Terminal },
  [Phase.DispatchingTools]: { [E.ToolsCompleted]: Phase.RecordingToolResults, [E.Finish]: Phase.Terminal },
  [Phase.RecordingToolResults]: { [E.StateCompleted]: Phase.CallingLlm, [E.Finish]: Phase.Terminal },
  [Phase.Suspended]: { [E.Finish]: Phase.Terminal },
  [Phase.Resuming]: { [E.ApprovalGranted]: Phase.DispatchingTools, [E.ApprovalRejected]: Phase.RecordingToolResults, [E.Finish]: Phase.Terminal },
};

function specified(phase: number, event: number): number {
  return SPECIFIED[phase]?.[event] ?? Phase.None;
}

let module: WebAssembly.Module;
beforeAll(async () => {
  module = await loadCoreModule("debug");
});

/** A core with one live execution (slot 0, generation 1) driven into
 * `phase` through real messages. Returns the core and its live session. */
function executionIn(phase: number): { core: ControlCore; session: number } {
  const core = new ControlCore(module, { agentsMax: 1, executionsMax: 1 });
  let revision = 1;
  const step = (kind: number, ...args: number[]) => expect(core.apply(kind, ...args)).toBe(ResultCode.Ok);
  step(M.RegisterAgent, 0);
  step(M.Start, 0, 1, 1, 0);
  step(M.InitialPreparationReady, 0, 1, 1, PreparationOutcome.Active, revision, 0, 1);
  const session = 1;
  const providerBarrier = () => {
    step(M.ProviderDispatchReady, 0, 1, session, revision, CommitOutcome.Committed, revision + 1);
    revision += 1;
    step(M.OperationSettled, 0, 1);
  };
  const toolBarrier = () => {
    step(M.ToolDispatchReady, 0, 1, session, revision, CommitOutcome.Committed, revision + 1, 1);
    revision += 1;
    step(M.OperationSettled, 0, 1);
  };
  if (phase === Phase.CallingLlm) return { core, session };
  providerBarrier();
  if (phase === Phase.Terminal) {
    step(M.SessionFinished, 0, 1, session, SessionEnding.Completed);
    return { core, session };
  }
  if (phase === Phase.Suspended || phase === Phase.Resuming) {
    step(M.SessionEvent, 0, 1, session, E.ApprovalRequired);
    if (phase === Phase.Suspended) return { core, session };
    step(M.SessionFinished, 0, 1, session, SessionEnding.Suspended);
    step(M.TerminalCommitReady, 0, 1, session, revision, OutcomeType.Suspended, revision + 1);
    revision += 1;
    step(M.Resume, 0, 1, 0, 1, 2, 1);
    step(M.ResumeCommitReady, 0, 1, revision, CommitOutcome.Committed, revision + 1, 1, 2);
    return { core, session: 2 };
  }
  step(M.SessionEvent, 0, 1, session, E.LlmCompletedWithTools);
  if (phase === Phase.DispatchingTools) return { core, session };
  toolBarrier();
  step(M.SessionEvent, 0, 1, session, E.ToolsCompleted);
  return { core, session };
}

describe("the FSM transition table", () => {
  it("holds exactly the specified pairs, and nothing for out-of-range values", () => {
    const core = new ControlCore(module, { agentsMax: 1, executionsMax: 1 });
    for (let phase = 0; phase < PhaseLimit.End + 3; phase += 1) {
      for (let event = 0; event < SessionEventLimit.End + 3; event += 1) {
        expect(core.fsmTransition(phase, event), `phase ${phase} × event ${event}`).toBe(specified(phase, event));
      }
    }
    expect(core.fsmTransition(0xffff_ffff, 0xffff_ffff)).toBe(Phase.None);
  });

  const livePhases = [Phase.CallingLlm, Phase.DispatchingTools, Phase.RecordingToolResults, Phase.Suspended, Phase.Resuming, Phase.Terminal];
  for (const phase of livePhases) {
    it(`applies every event in phase ${phase} as the table says`, () => {
      for (let event = 1; event < SessionEventLimit.End; event += 1) {
        const { core, session } = executionIn(phase);
        expect(core.snapshot().executions[0]!.phase).toBe(phase);
        const before = core.snapshot();
        const next = specified(phase, event);
        const code =
          event === E.Finish ? core.apply(M.SessionFinished, 0, 1, session, SessionEnding.Completed) : core.apply(M.SessionEvent, 0, 1, session, event);
        if (event === E.Finish && next !== Phase.None) {
          expect(code).toBe(ResultCode.Ok);
          expect(core.snapshot().executions[0]!.phase).toBe(Phase.Terminal);
        } else if (event === E.Finish) {
          expect(code).toBe(ResultCode.TransitionUndefined);
          expect(core.snapshot()).toEqual(before);
        } else if (next === Phase.None) {
          expect(code, `phase ${phase} × event ${event}`).toBe(ResultCode.TransitionUndefined);
          expect(core.effects()).toEqual([{ kind: EffectKind.DropStale, messageKind: M.SessionEvent, code: ResultCode.TransitionUndefined }]);
          expect(core.snapshot()).toEqual(before);
        } else {
          expect(code).toBe(ResultCode.Ok);
          expect(core.snapshot().executions[0]!.phase).toBe(next);
        }
      }
    });
  }
});

describe("docs/fsm.md", () => {
  it("is the document the compiled table renders (run `npm run build:docs` after changing the table)", async () => {
    const core = new ControlCore(module, { agentsMax: 1, executionsMax: 1 });
    const onDisk = await readFile(new URL("../../docs/fsm.md", import.meta.url), "utf8");
    expect(onDisk).toBe(renderFsmDocument(core));
  });
});
