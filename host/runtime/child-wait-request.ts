// The request an `agentTool()` call suspends its execution with
// (docs/decisions/0079): a wait of kind `child` naming the child it starts —
// its conversation (derived from the parent's execution and call ids, or
// the application's `conversation` function), its execution id (fixed by
// the same ids, so every restart finds the same child), its definition and
// its input. Apart from child-waits.ts because it checks the conversation
// id with the start options' rules, which import the waits.

import { childInputOf } from "../agent/agent-tool.js";
import type { ChildAgentSpecification } from "../agent/tools.js";
import { startExecutionIdOf } from "../store/start-filing.js";
import { childStartKey } from "./child-waits.js";
import type { ChildWait } from "./events.js";
import { validateAgentId } from "./options.js";

/** The wait an `agentTool()` call makes: the child it names is derived
 * from the parent's execution and call ids, so a recovery of either finds
 * the same child. Throws InvalidInputError when the application's
 * `conversation` function gives no usable id. */
export function childWaitOf(
  specification: ChildAgentSpecification,
  parent: { readonly executionId: string; readonly conversationId: string },
  call: { readonly callId: string; readonly input: unknown },
): ChildWait {
  const derived = `${parent.executionId}:${call.callId}`;
  const given =
    specification.conversation === undefined
      ? derived
      : specification.conversation(call.input, { executionId: parent.executionId, callId: call.callId, conversationId: parent.conversationId });
  const conversationId = validateAgentId(given, `the conversation of the child "${specification.definition}" of execution ${parent.executionId}`);
  return {
    executionId: startExecutionIdOf(conversationId, childStartKey(parent.executionId, call.callId)),
    conversationId,
    definition: specification.definition,
    input: childInputOf(call.input),
  };
}
