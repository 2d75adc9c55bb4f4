// `npm run demo` (for now): walks the control core through one agent run,
// model → tool → model, the way the host will drive it, and prints every
// decision: the message, the result, the effects the host must carry out.
// Along the way a second start on the busy agent is refused and a duplicate
// barrier result is dropped as stale. The full runtime demo (a support agent
// with approval and crash recovery) arrives with the CLI.

import { CommitOutcome, MessageKind as M, OutcomeType, PreparationOutcome, SessionEnding, SessionEventKind as E } from "../assembly/abi.js";
import { effectKindName, messageKindName, resultCodeName } from "../host/core/names.js";
import { ControlCore } from "../host/core/control-core.js";
import type { CoreEffect } from "../host/core/effects.js";

const core = await ControlCore.create({ agentsMax: 8, executionsMax: 8 });

function describeEffect(effect: CoreEffect): string {
  const { kind, ...args } = effect;
  const fields = Object.entries(args).map(([key, value]) => `${key}=${key === "code" ? resultCodeName(value as number) : value}`);
  return `${effectKindName(kind)}(${fields.join(", ")})`;
}

function send(label: string, kind: number, ...args: number[]): CoreEffect[] {
  const code = core.apply(kind, ...args);
  const effects = core.effects();
  console.log(`${messageKindName(kind).padEnd(24)} ${label.padEnd(36)} → ${resultCodeName(code)}`);
  for (const effect of effects) console.log(`${" ".repeat(28)}· ${describeEffect(effect)}`);
  return effects;
}

console.log("Phronomy control core — one agent run, decision by decision\n");
send("agent 'support'", M.RegisterAgent, 0);
const admitted = send("request #1", M.Start, 0, 1, 1, 0);
const token = (admitted[0] as { ownerToken: number }).ownerToken;
send("request #2 while #1 is admitted", M.Start, 0, 1, 2, 0);
send("prepare committed at revision 1", M.InitialPreparationReady, 0, 1, token, PreparationOutcome.Active, 1, 0, 1);
send("provider barrier at revision 2", M.ProviderDispatchReady, 0, 1, 1, 1, CommitOutcome.Committed, 2);
send("the same result again", M.ProviderDispatchReady, 0, 1, 1, 1, CommitOutcome.Committed, 2);
send("model call returned", M.OperationSettled, 0, 1);
send("it asked for a tool", M.SessionEvent, 0, 1, 1, E.LlmCompletedWithTools);
send("tool barrier at revision 3", M.ToolDispatchReady, 0, 1, 1, 2, CommitOutcome.Committed, 3, 1);
send("cancelled while the tool runs", M.SessionFinished, 0, 1, 1, SessionEnding.Cancelled);
send("the tool settles", M.OperationSettled, 0, 1);
send("", M.DeferredTerminal, 0, 1, 1);
send("terminal committed at revision 4", M.TerminalCommitReady, 0, 1, 1, 3, OutcomeType.Failed, 4);
send("request #3: the agent is free again", M.Start, 0, 1, 3, 0);
console.log("\nEvery line above is one apply of core.wasm: the host only carries out the effects.");
