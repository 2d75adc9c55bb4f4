// One step of differential fuzzing, shared by the vitest test
// (`differential.test.ts`) and the package harness (`test/package/fuzz.ts`,
// which runs on Node, Deno and Bun without vitest): the next message is
// applied to the core and to the reference model, and their codes, effects
// and tables must agree and the invariants hold. How a disagreement is
// reported is the caller's (`agree`), as is how effects are decoded (the
// package harness decodes with the packaged decoder).

import type { CoreEffect } from "../../host/core/effects.js";
import type { ControlMachine, CoreSnapshot } from "../../host/core/machine.js";
import { checkInvariants, type RevisionHistory } from "./invariants.js";
import type { Intent, Message, MessageStream } from "./message-stream.js";

/** Fails, naming `what`, unless `actual` and `expected` are equal. */
export type Agree = (actual: unknown, expected: unknown, what: string) => void;

export interface StepContext {
  readonly core: ControlMachine;
  readonly model: ControlMachine;
  readonly stream: MessageStream;
  readonly revisions: RevisionHistory;
  readonly decode: (words: readonly number[]) => CoreEffect[];
  readonly agree: Agree;
}

/** The slots (one past the high-water mark included) `machine` says are
 * held recovery_required: the host asks the core this instead of keeping a
 * copy, so the model must answer the same. */
function heldForRecovery(machine: ControlMachine, snapshot: CoreSnapshot): number[] {
  const held: number[] = [];
  for (let slot = 0; slot <= snapshot.executions.length; slot += 1) if (machine.executionHeldForRecovery(slot)) held.push(slot);
  return held;
}

/** The slots `machine` says are at rest (suspended, nothing under way):
 * the host lets go of those executions' objects on the core's word. */
function atRest(machine: ControlMachine, snapshot: CoreSnapshot): number[] {
  const resting: number[] = [];
  for (let slot = 0; slot <= snapshot.executions.length; slot += 1) if (machine.executionAtRest(slot)) resting.push(slot);
  return resting;
}

/** The agent slots `machine` says hold a conversation at rest: the host
 * lets go of those conversations' records on the core's word. */
function conversationsAtRest(machine: ControlMachine, snapshot: CoreSnapshot): number[] {
  const resting: number[] = [];
  for (let slot = 0; slot <= snapshot.agents.length; slot += 1) if (machine.conversationAtRest(slot)) resting.push(slot);
  return resting;
}

/** Applies the message the intent makes; returns it with the core's code and effects. */
export function differentialStep(
  context: StepContext,
  next: Intent,
  index: number,
): { readonly message: Message; readonly code: number; readonly effects: readonly CoreEffect[] } {
  const { core, model, stream, revisions, decode, agree } = context;
  const before = core.snapshot();
  const message = stream.next(next, before);
  const code = core.apply(...message);
  const modelCode = model.apply(...message);
  const effects = decode(core.effectWords());
  const after = core.snapshot();
  const where = `step ${index}, message [${message.join(", ")}]`;
  agree(code, modelCode, `result code at ${where}`);
  agree(effects, decode(model.effectWords()), `effects at ${where}`);
  agree(after, model.snapshot(), `tables at ${where}`);
  agree(heldForRecovery(core, after), heldForRecovery(model, after), `executions held for recovery at ${where}`);
  agree(atRest(core, after), atRest(model, after), `executions at rest at ${where}`);
  agree(conversationsAtRest(core, after), conversationsAtRest(model, after), `conversations at rest at ${where}`);
  agree(checkInvariants({ message, code, effects, before, after }) ?? revisions.check(after), undefined, `invariant at ${where}`);
  stream.observe(message, effects);
  stream.confirmPurge(message, code);
  return { message, code, effects };
}
