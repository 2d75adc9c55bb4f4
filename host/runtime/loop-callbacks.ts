// The `ToolLoopAgent` callbacks told around the work of a step
// (docs/decisions/0071): `onStepStart` before each model call, after
// `prepareStep`, and `onToolExecutionStart`/`onToolExecutionEnd` around
// each tool call that runs. They are told where the work is done, so a
// recovery that makes a model call again or runs a batch again tells them
// again: at least once, as `onStepFinish`. A throw fails the execution
// `STREAM_CALLBACK`, naming the setting.

import type { Json } from "../store/records.js";
import { settingFailed } from "./call-plans.js";
import type { LoopCallbacks, StepStartEvent, ToolExecutionStartEvent } from "./loop-settings.js";

/** A callback that threw, so the execution fails rather than the tool. */
export class CallbackFailure {
  constructor(readonly error: unknown) {}
}

/** Tells `onStepStart` (or its older name), if the definition has it. */
export async function tellStepStart(callbacks: LoopCallbacks, event: StepStartEvent): Promise<void> {
  const onStepStart = callbacks.onStepStart ?? callbacks.experimental_onStepStart;
  if (onStepStart === undefined) return;
  try {
    await onStepStart(event);
  } catch (error) {
    throw settingFailed(callbacks.onStepStart !== undefined ? "onStepStart" : "experimental_onStepStart", error);
  }
}

/** Runs one tool call between its two callbacks; a callback that throws
 * rejects with a `CallbackFailure`, the call's own failure rejects as it
 * is (after `onToolExecutionEnd` was told it). */
export async function withToolCallbacks<T extends { readonly output: Json }>(
  callbacks: LoopCallbacks,
  start: ToolExecutionStartEvent,
  now: () => number,
  run: () => Promise<T>,
): Promise<T> {
  const { onToolExecutionStart, onToolExecutionEnd } = callbacks;
  if (onToolExecutionStart === undefined && onToolExecutionEnd === undefined) return run();
  await tell("onToolExecutionStart", onToolExecutionStart, start);
  const startedAt = now();
  const { toolCallId, toolName, input } = start.toolCall;
  let result: T;
  try {
    result = await run();
  } catch (error) {
    const toolOutput = { type: "tool-error" as const, toolCallId, toolName, input, error };
    await tell("onToolExecutionEnd", onToolExecutionEnd, { ...start, toolExecutionMs: now() - startedAt, toolOutput });
    throw error;
  }
  const toolOutput = { type: "tool-result" as const, toolCallId, toolName, input, output: result.output };
  await tell("onToolExecutionEnd", onToolExecutionEnd, { ...start, toolExecutionMs: now() - startedAt, toolOutput });
  return result;
}

async function tell<E>(setting: string, callback: ((event: E) => unknown) | undefined, event: E): Promise<void> {
  if (callback === undefined) return;
  try {
    await callback(event);
  } catch (error) {
    throw new CallbackFailure(settingFailed(setting, error));
  }
}
