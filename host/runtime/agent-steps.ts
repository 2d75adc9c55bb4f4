// An execution's steps as the AI SDK shows them to `stopWhen`,
// `prepareStep`, `onStepFinish` and `onFinish` (docs/decisions/0071): one
// step per model call, with the results of the tools it called. Kept only
// for a definition with one of those settings. A live session adds a step
// when the model answers and fills its results when the batch settles; a
// resumed or recovered one rebuilds them from the execution's recorded
// steps (the same records its conversation is rebuilt from), so a
// condition sees the same steps after a restart as before it.
//
// `onStepFinish` is told each finished step once per process; how many
// steps it was told rides on the next barrier as a note (`stepsFinished`),
// so after a restart it is told the finished steps no barrier recorded as
// told: at least once.

import type { ModelTurn, ModelUsage, ToolResult } from "../agent/messages.js";
import type { Json, StoredStep, UsageTotals } from "../store/records.js";
import { settingFailed } from "./call-plans.js";
import type { AgentStep, LoopSettings, StepContentPart, StepToolCall, StepToolError, StepToolResult, StopCondition } from "./loop-settings.js";

export class StepLog {
  readonly steps: AgentStep[] = [];
  /** How many steps `onStepFinish` was told of (durably, or here). */
  told = 0;
  /** Whether the last step still waits for its tools' results. */
  private waiting = false;

  /** The steps whose tools all returned (or that called none). */
  get finished(): number {
    return this.waiting ? this.steps.length - 1 : this.steps.length;
  }

  /** The model answered: a new step, its results still to come. */
  modelAnswered(turn: ModelTurn): void {
    this.addStep(turn.text, turn.reasoning, turn.toolCalls, turn.usage, turn.finishReason);
  }

  /** The last step's tool batch settled (or was declined). */
  toolsSettled(results: readonly ToolResult[]): void {
    const last = this.steps.pop();
    if (last === undefined) return;
    this.steps.push(withResults(last, results));
    this.waiting = false;
  }

  /** The steps as recorded (an execution resumed or recovered; the records
   * a retry discarded left out), and how many `onStepFinish` was told of. */
  restore(records: readonly StoredStep[]): void {
    this.steps.length = 0;
    this.waiting = false;
    for (const record of records) {
      const payload = record.payload as Record<string, Json> | null;
      if (payload === null) continue;
      if (record.kind === "model_response") this.addRecordedAnswer(payload);
      else if (record.kind === "tool_results") this.toolsSettled((payload["results"] ?? []) as unknown as ToolResult[]);
      else if (record.kind === "note" && typeof payload["stepsFinished"] === "number") this.told = Math.max(this.told, payload["stepsFinished"]);
    }
  }

  private addRecordedAnswer(payload: Record<string, Json>): void {
    const calls = (payload["toolCalls"] ?? []) as unknown as ModelTurn["toolCalls"];
    const usage = (payload["usage"] ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0 }) as unknown as ModelUsage;
    const reasoning = Array.isArray(payload["reasoning"]) ? (payload["reasoning"] as unknown as ModelTurn["reasoning"]) : undefined;
    const finishReason = typeof payload["finishReason"] === "string" ? payload["finishReason"] : "unknown";
    this.addStep(String(payload["text"] ?? ""), reasoning, calls, usage, finishReason);
  }

  private addStep(text: string, reasoning: ModelTurn["reasoning"], calls: ModelTurn["toolCalls"], usage: ModelUsage, finishReason: string): void {
    const toolCalls: StepToolCall[] = calls.map((call) => ({ type: "tool-call", toolCallId: call.callId, toolName: call.toolName, input: call.input }));
    const reasoningText = reasoning !== undefined && reasoning.length > 0 ? reasoning.map((part) => part.text).join("") : undefined;
    const step: AgentStep = { stepNumber: this.steps.length, text, reasoningText, content: [], toolCalls, toolResults: [], finishReason, usage };
    this.steps.push(withResults(step, []));
    this.waiting = toolCalls.length > 0;
  }
}

/** The step with its tools' results: in `toolResults` (those that
 * succeeded) and in `content`, after the step's text and calls. */
function withResults(step: AgentStep, results: readonly ToolResult[]): AgentStep {
  const inputs = new Map(step.toolCalls.map((call) => [call.toolCallId, call.input]));
  const toolResults: StepToolResult[] = [];
  const outcomes: (StepToolResult | StepToolError)[] = [];
  for (const result of results) {
    const base = { toolCallId: result.callId, toolName: result.toolName, input: inputs.get(result.callId) ?? null };
    if (result.isError) outcomes.push({ type: "tool-error", ...base, error: result.output });
    else {
      const part: StepToolResult = { type: "tool-result", ...base, output: result.output };
      toolResults.push(part);
      outcomes.push(part);
    }
  }
  const content: StepContentPart[] = [
    ...(step.reasoningText !== undefined ? [{ type: "reasoning" as const, text: step.reasoningText }] : []),
    ...(step.text.length > 0 ? [{ type: "text" as const, text: step.text }] : []),
    ...step.toolCalls,
    ...outcomes,
  ];
  return { ...step, content, toolResults };
}

/** The usage of every step, summed (`onFinish`'s `totalUsage`). */
export function totalUsageOf(steps: readonly AgentStep[]): UsageTotals {
  let inputTokens = 0;
  let outputTokens = 0;
  let totalTokens = 0;
  for (const { usage } of steps) {
    inputTokens += usage.inputTokens ?? 0;
    outputTokens += usage.outputTokens ?? 0;
    totalTokens += usage.totalTokens ?? 0;
  }
  return { inputTokens, outputTokens, totalTokens };
}

/** Tells `onStepFinish` each finished step it was not told of, in order;
 * resolves to whether it told any (the count then rides on the next
 * barrier). A throw fails the execution (`STREAM_CALLBACK`). */
export async function tellFinishedSteps(log: StepLog, onStepFinish: LoopSettings["onStepFinish"]): Promise<boolean> {
  const finished = log.finished;
  if (onStepFinish === undefined || log.told >= finished) return false;
  while (log.told < finished) {
    const step = log.steps[log.told] as AgentStep;
    try {
      await onStepFinish(step);
    } catch (error) {
      throw settingFailed("onStepFinish", error);
    }
    log.told += 1;
  }
  return true;
}

/** Whether a stop condition is met on the steps so far (as the AI SDK's
 * `isStopConditionMet`: any one of them). */
export async function stopConditionMet(conditions: readonly StopCondition["bivariantCall"][], steps: AgentStep[]): Promise<boolean> {
  try {
    const answers = await Promise.all(conditions.map((condition) => condition({ steps: [...steps] })));
    return answers.some((answer) => answer === true);
  } catch (error) {
    throw settingFailed("stopWhen", error);
  }
}

/** The execution completes: `onStepFinish` for its last steps, then
 * `onFinish` once. */
export async function tellFinish(log: StepLog, settings: LoopSettings, executionId: string, output: Json): Promise<boolean> {
  const told = await tellFinishedSteps(log, settings.onStepFinish);
  const onFinish = settings.onFinish;
  if (onFinish === undefined) return told;
  const last = log.steps.at(-1);
  try {
    await onFinish({
      executionId,
      steps: [...log.steps],
      text: last?.text ?? "",
      output,
      finishReason: last?.finishReason ?? "unknown",
      totalUsage: totalUsageOf(log.steps),
    });
  } catch (error) {
    throw settingFailed("onFinish", error);
  }
  return told;
}
