// Records the control messages of realistic agent runs, "model → tool →
// model → tool → model" (20 messages each), for many agents in lockstep,
// by driving a core the way the host does: every argument comes from the
// effects the core answered with. The recording is replayed on fresh cores
// (and the reference model) for timing; the core is deterministic, so a
// replay gives the same answers.

import { CommitOutcome, MessageKind as M, OutcomeType, PreparationOutcome, ResultCode, SessionEnding, SessionEventKind as E } from "../../assembly/abi.js";
import type { ControlMachine } from "../../host/core/machine.js";

export const WORDS_PER_MESSAGE = 8;
export const MESSAGES_PER_RUN = 20;

interface Live {
  execution: number;
  generation: number;
  session: number;
  revision: number;
}

/** Records `rounds` runs on each of `agents` agents. The machine must be
 * fresh; agents are registered first (not part of the recording). */
export function recordAgentRuns(machine: ControlMachine, agents: number, rounds: number): Int32Array {
  for (let agent = 0; agent < agents; agent += 1) expectOk(machine, machine.apply(M.RegisterAgent, 0), "register");
  const stream: number[] = [];
  const send = (kind: number, ...args: number[]): number[] => {
    const message = [kind, ...args, 0, 0, 0, 0, 0, 0, 0].slice(0, WORDS_PER_MESSAGE);
    stream.push(...message);
    expectOk(machine, machine.apply(message[0]!, ...message.slice(1)), `message ${kind}`);
    return machine.effectWords();
  };
  for (let round = 0; round < rounds; round += 1) {
    const live: Live[] = [];
    for (let agent = 0; agent < agents; agent += 1) {
      const prepare = send(M.Start, agent, 1, agent, 0);
      const token = prepare[2]!;
      const installed = send(M.InitialPreparationReady, agent, 1, token, PreparationOutcome.Active, 1, 0, agent);
      live.push({ execution: installed[1]!, generation: installed[2]!, session: installed[12]!, revision: 1 });
    }
    for (let turn = 0; turn < 3; turn += 1) {
      for (const run of live) {
        barrier(send, M.ProviderDispatchReady, run);
        send(M.OperationSettled, run.execution, run.generation);
        if (turn === 2) continue;
        send(M.SessionEvent, run.execution, run.generation, run.session, E.LlmCompletedWithTools);
        barrier(send, M.ToolDispatchReady, run);
        send(M.OperationSettled, run.execution, run.generation);
        send(M.SessionEvent, run.execution, run.generation, run.session, E.ToolsCompleted);
        send(M.SessionEvent, run.execution, run.generation, run.session, E.StateCompleted);
      }
    }
    for (const run of live) {
      send(M.SessionFinished, run.execution, run.generation, run.session, SessionEnding.Completed);
      send(M.TerminalCommitReady, run.execution, run.generation, run.session, run.revision, OutcomeType.Completed, run.revision + 1);
    }
  }
  return Int32Array.from(stream);
}

function barrier(send: (kind: number, ...args: number[]) => number[], kind: number, run: Live): void {
  send(kind, run.execution, run.generation, run.session, run.revision, CommitOutcome.Committed, run.revision + 1, 1);
  run.revision += 1;
}

function expectOk(machine: ControlMachine, code: number, what: string): void {
  if (code !== ResultCode.Ok) throw new Error(`recording an agent run: ${what} returned ${code} (${machine.effectWords().join(",")})`);
}
