// A definition's `toolApproval` (AI SDK 7's `ToolApprovalConfiguration`,
// docs/decisions/0071): which tool calls ask a person, which run and which
// are declined without asking. Evaluated once per call, before the tool
// barrier; its outcome is written with the barrier (a declined call is
// recorded declined, an asked one is the approval request), so a recovery
// never asks again and never decides differently.

import type { ModelMessage } from "ai";
import { InvalidInputError, PhronomyError } from "../errors.js";

/** A tool call of a step (declared here, below loop-settings.ts, which
 * re-exports it: the AI SDK's `TypedToolCall` members). */
export interface StepToolCall {
  readonly type: "tool-call";
  readonly toolCallId: string;
  readonly toolName: string;
  /** JSON, here (unknown as the AI SDK types it). */
  readonly input: unknown;
}

/** What `toolApproval` answers for one call, as the AI SDK has it:
 * "user-approval" asks a person, "denied" declines without asking (the
 * model is told, with the reason), "approved" and "not-applicable" (or
 * undefined) run it without asking. */
export type ToolApprovalStatus =
  | undefined
  | "not-applicable"
  | "approved"
  | "denied"
  | "user-approval"
  | { readonly type: "not-applicable"; readonly reason?: never }
  | { readonly type: "approved" | "denied" | "user-approval"; readonly reason?: string };

/** What a per-tool approval function is given besides the call's input. */
export interface SingleToolApprovalOptions {
  readonly toolCallId: string;
  /** The messages the model answered with this call. */
  readonly messages: ModelMessage[];
  /** The tool's entry of the definition's `toolsContext`. */
  readonly toolContext: unknown;
  /** The execution's `experimental_context`. */
  readonly runtimeContext: unknown;
}

/** What a generic approval function is given for each call. */
export interface GenericToolApprovalOptions {
  readonly toolCall: StepToolCall;
  /** The definition's tools, by name. */
  readonly tools: unknown;
  /** The definition's `toolsContext`. */
  readonly toolsContext: unknown;
  /** The execution's `experimental_context`. */
  readonly runtimeContext: unknown;
  readonly messages: ModelMessage[];
}

/** A per-tool approval function. A method, so a function typed for its
 * tool's own input fits. */
interface SingleToolApproval {
  bivariantCall(input: unknown, options: SingleToolApprovalOptions): ToolApprovalStatus | PromiseLike<ToolApprovalStatus>;
}

/** A definition's `toolApproval`: one function for every call, or per tool
 * name a status or a function of the call's input. */
export type ToolApproval =
  | ((options: GenericToolApprovalOptions) => ToolApprovalStatus | PromiseLike<ToolApprovalStatus>)
  | {
      /** The tool's status, or a function of its call's input giving one. */
      readonly [toolName: string]: ToolApprovalStatus | SingleToolApproval["bivariantCall"];
    };

/** A status with its reason, as the session acts on it. */
export interface ApprovalVerdict {
  readonly type: "not-applicable" | "approved" | "denied" | "user-approval";
  readonly reason: string | undefined;
}

const statusTypes = ["not-applicable", "approved", "denied", "user-approval"] as const;

/** Checks a definition's `toolApproval`; `toolNames` are its tools'. */
export function checkToolApproval(setting: unknown, toolNames: readonly string[], what: string): void {
  if (setting === undefined || typeof setting === "function") return;
  if (typeof setting !== "object" || setting === null || Array.isArray(setting)) {
    throw new InvalidInputError(`${what}: "toolApproval" must be a function or an object of statuses (or functions) by tool name`);
  }
  for (const [name, status] of Object.entries(setting)) {
    if (!toolNames.includes(name)) {
      throw new InvalidInputError(`${what}: "toolApproval" names "${name}", which is not one of its tools (${toolNames.join(", ")})`);
    }
    if (typeof status !== "function" && verdictOf(status) === undefined) {
      throw new InvalidInputError(`${what}: "toolApproval.${name}" must be ${statusList()} or a function returning one, got ${JSON.stringify(status)}`);
    }
  }
}

/** The call's verdict, or undefined when the setting says nothing of its
 * tool (the tool's own `needsApproval` decides, as in the AI SDK: a
 * configured status, "not-applicable" included, takes precedence). */
export async function toolApprovalVerdict(
  setting: ToolApproval,
  call: StepToolCall,
  options: { readonly tools: unknown; readonly toolsContext: unknown; readonly runtimeContext: unknown; readonly messages: ModelMessage[] },
): Promise<ApprovalVerdict | undefined> {
  let status: unknown;
  if (typeof setting === "function") {
    status = await callSetting(() => setting({ toolCall: call, ...options }));
  } else {
    const configured = Object.hasOwn(setting, call.toolName) ? setting[call.toolName] : undefined;
    if (configured === undefined || configured === null) return undefined;
    const toolContext = (options.toolsContext as Record<string, unknown> | undefined)?.[call.toolName];
    status =
      typeof configured === "function"
        ? await callSetting(() =>
            configured(call.input, { toolCallId: call.toolCallId, messages: options.messages, toolContext, runtimeContext: options.runtimeContext }),
          )
        : configured;
  }
  const verdict = verdictOf(status);
  if (verdict === undefined) {
    throw new PhronomyError(
      "STREAM_CALLBACK",
      `the agent's toolApproval returned ${JSON.stringify(status)} for tool "${call.toolName}" (call ${call.toolCallId}); it must return ${statusList()}`,
      { details: { setting: "toolApproval", toolName: call.toolName, callId: call.toolCallId } },
    );
  }
  return verdict;
}

async function callSetting(run: () => unknown): Promise<unknown> {
  try {
    return await run();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new PhronomyError("STREAM_CALLBACK", `the agent's toolApproval threw: ${message}`, { cause: error, details: { setting: "toolApproval" } });
  }
}

function verdictOf(status: unknown): ApprovalVerdict | undefined {
  if (status === undefined) return { type: "not-applicable", reason: undefined };
  if (typeof status === "string")
    return (statusTypes as readonly string[]).includes(status) ? { type: status as ApprovalVerdict["type"], reason: undefined } : undefined;
  if (typeof status !== "object" || status === null) return undefined;
  const { type, reason } = status as { type?: unknown; reason?: unknown };
  if (typeof type !== "string" || !(statusTypes as readonly string[]).includes(type)) return undefined;
  if (reason !== undefined && typeof reason !== "string") return undefined;
  return { type: type as ApprovalVerdict["type"], reason };
}

function statusList(): string {
  return `${statusTypes.map((type) => `"${type}"`).join(", ")}, { type, reason? } or undefined`;
}
