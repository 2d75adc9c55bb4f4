// One model call straight to the provider's `doGenerate`, made with the AI
// SDK's own pieces (`ai/internal`) instead of `generateText`'s step pipeline
// (docs/decisions/0093). `generateText` rebuilds per call what a definition
// fixes once — the model resolved, the tools turned into JSON Schema, the
// settings validated, the tool choice, the user-agent header — and runs a
// pipeline (callbacks, telemetry, approvals, the next-step decision, the
// response messages' clone) that a Phronomy call, one step with tools
// without `execute`, never uses. Here the definition's part is prepared
// once ("a plan", kept by the definition's frozen call options) and each
// call does only what depends on its messages: the prompt conversion (the
// SDK's, with its downloads), the provider call, the tool calls' parsing
// and the content's conversion (the SDK's), and the warnings' log.
//
// A plan exists only for options this file understands key by key
// (`planKeys`): a definition with `output`, `experimental_repairToolCall`,
// `timeout`, `telemetry` or anything else gets none, and its calls keep
// `generateText`; so does a call the caller routes there (a telemetry
// listener, messages of its own: model.ts). What the pipeline does that a
// caller reads is done here the same way, and a differential test holds the
// two paths to equal turns and equal provider call options
// (test/agent/direct-call.test.ts).

import { createRequire } from "node:module";
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4FunctionTool, LanguageModelV4ToolChoice } from "@ai-sdk/provider";
import { loadAiSdkInternals, type AiSdk, type AiSdkInternals } from "./ai-sdk.js";
import { MODEL_CALL_SETTING_KEYS } from "./call-setting-keys.js";

/** A language model object or id, as model.ts's `LanguageModel` (declared
 * here, not imported: model.ts imports this file). */
type LanguageModel = string | { readonly specificationVersion: string; readonly provider: string; readonly modelId: string };

/** The members of model.ts's `CallOverrides` a direct call applies (its
 * `messages` send a call to `generateText`). */
export interface DirectCallOverrides {
  readonly model?: LanguageModel;
  readonly system?: string;
  readonly toolChoice?: unknown;
  readonly activeTools?: readonly string[];
  readonly providerOptions?: unknown;
}

type LooseRecord = { readonly [key: string]: unknown };
type ModelMessages = NonNullable<Parameters<AiSdkInternals["standardizePrompt"]>[0]["messages"]>;
type ToolSet = Record<string, LooseRecord>;
type CallSettings = ReturnType<AiSdkInternals["prepareCallSettings"]>;

/** The keys of a definition's call options (model.ts's static options) a
 * direct call carries out exactly as `generateText` does. Any other key
 * present — `output`, `experimental_repairToolCall`, `timeout`,
 * `telemetry`, a setting a later AI SDK adds — keeps `generateText`. */
const planKeys: ReadonlySet<string> = new Set([
  "model",
  "system",
  "allowSystemInMessages",
  "maxRetries",
  "tools",
  "toolChoice",
  "activeTools",
  "toolOrder",
  ...MODEL_CALL_SETTING_KEYS,
]);

/** The members of an AI SDK tool the pipeline acts on besides describing
 * it to the model: a tool set with any of them keeps `generateText`
 * (model.ts builds tools without them; this is the check that it still
 * does). */
const pipelineToolKeys = ["execute", "needsApproval", "onInputStart", "onInputAvailable", "onInputDelta", "deferLoading", "type", "contextSchema"];

/** The `ai/internal` functions a direct call uses; an `ai` without one of
 * them (another 7.x release) keeps `generateText`. */
const internalFunctions = [
  "resolveLanguageModel",
  "prepareTools",
  "prepareToolChoice",
  "prepareCallSettings",
  "standardizePrompt",
  "convertToLanguageModelPrompt",
  "parseToolCall",
  "convertLanguageModelContent",
  "asLanguageModelUsage",
  "logWarnings",
] as const;

/** What a definition's calls share: prepared once, read by every call. */
export interface DirectCallPlan {
  readonly ai: AiSdk;
  readonly internals: AiSdkInternals;
  readonly model: LanguageModel;
  readonly instructions: string | undefined;
  /** The tool set as given (the content's conversion reads it). */
  readonly tools: ToolSet | undefined;
  readonly toolOrder: readonly string[] | undefined;
  /** The tools the model is shown (`activeTools` applied): tool calls are parsed against them. */
  readonly modelTools: ToolSet | undefined;
  readonly stepTools: LanguageModelV4FunctionTool[] | undefined;
  readonly toolChoice: LanguageModelV4ToolChoice;
  readonly settings: CallSettings;
  readonly headers: Record<string, string>;
  readonly providerOptions: LanguageModelV4CallOptions["providerOptions"];
}

/** One provider answer, converted as `generateText` converts its step. */
export interface DirectStep {
  readonly content: readonly unknown[];
  readonly usage: unknown;
  readonly finishReason: unknown;
}

/** Plans by the definition's frozen call options; `null` when its calls
 * need `generateText`. */
const plans = new WeakMap<object, Promise<DirectCallPlan | null>>();

/** The plan of a definition's call options, prepared at its first call. */
export function directCallPlan(ai: AiSdk, options: Readonly<Record<string, unknown>>): Promise<DirectCallPlan | null> {
  let plan = plans.get(options);
  if (plan === undefined) {
    plan = loadAiSdkInternals().then((internals) => (internals === undefined || !plannable(internals, options) ? null : preparePlan(ai, internals, options)));
    plans.set(options, plan);
    // A plan that failed (an invalid setting) is prepared again by the next
    // call, which fails the same way: `generateText` too checks per call.
    plan.catch(() => plans.delete(options));
  }
  return plan;
}

function plannable(internals: AiSdkInternals, options: Readonly<Record<string, unknown>>): boolean {
  if (!internalFunctions.every((name) => typeof internals[name] === "function")) return false;
  if (options.maxRetries !== 0 || options.allowSystemInMessages !== true) return false;
  for (const key in options) if (!planKeys.has(key)) return false;
  const tools = options.tools;
  if (tools === undefined) return true;
  if (!isRecord(tools)) return false;
  return Object.values(tools).every((tool) => isRecord(tool) && pipelineToolKeys.every((key) => tool[key] === undefined));
}

async function preparePlan(ai: AiSdk, internals: AiSdkInternals, options: Readonly<Record<string, unknown>>): Promise<DirectCallPlan> {
  const tools = options.tools as ToolSet | undefined;
  const toolOrder = options.toolOrder as readonly string[] | undefined;
  const modelTools = activeToolsOf(tools, options.activeTools as readonly string[] | undefined);
  return {
    ai,
    internals,
    model: options.model as LanguageModel,
    instructions: options.system as string | undefined,
    tools,
    toolOrder,
    modelTools,
    stepTools: await stepToolsOf(internals, modelTools, toolOrder),
    toolChoice: internals.prepareToolChoice({ toolChoice: options.toolChoice as never }),
    settings: internals.prepareCallSettings(options as Parameters<AiSdkInternals["prepareCallSettings"]>[0]),
    headers: withUserAgent(options.headers as Record<string, string | undefined> | undefined),
    providerOptions: options.providerOptions as LanguageModelV4CallOptions["providerOptions"],
  };
}

/** The tools as the provider is shown them: `prepareTools` resolves each
 * JSON Schema (the SDK does it per call). */
function stepToolsOf(internals: AiSdkInternals, tools: ToolSet | undefined, toolOrder: readonly string[] | undefined) {
  return internals.prepareTools({ tools: tools as never, toolOrder: toolOrder as never }) as Promise<LanguageModelV4FunctionTool[] | undefined>;
}

/** `generateText`'s `filterActiveTools` (not exported by `ai/internal`). */
function activeToolsOf(tools: ToolSet | undefined, activeTools: readonly string[] | undefined): ToolSet | undefined {
  if (tools === undefined || activeTools === undefined) return tools;
  return Object.fromEntries(Object.entries(tools).filter(([name]) => activeTools.includes(name)));
}

// -- the user agent ----------------------------------------------------------------

let aiVersion: string | undefined;

/** The `ai` package's version, read once from its package.json: the suffix
 * `generateText` adds to the user agent is `ai/<version>`. */
function aiPackageVersion(): string {
  aiVersion ??= (createRequire(import.meta.url)("ai/package.json") as { version: string }).version;
  return aiVersion;
}

/** `withUserAgentSuffix(headers, "ai/<version>")` of the AI SDK's provider
 * utilities, as `generateText` calls it: names lowercased, unset values
 * dropped, `ai/<version>` appended to any user agent given. */
function withUserAgent(headers: Record<string, string | undefined> | undefined): Record<string, string> {
  const normalized: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers ?? {})) if (value != null) normalized[key.toLowerCase()] = value;
  const merged = new Headers(normalized);
  merged.set("user-agent", [merged.get("user-agent") ?? "", `ai/${aiPackageVersion()}`].filter(Boolean).join(" "));
  return Object.fromEntries(merged.entries());
}

// -- the model -----------------------------------------------------------------------

/** Models resolved for direct calls: a v2 or v3 model gets the SDK's v4
 * adapter once, not at every call. */
const resolvedModels = new WeakMap<object, LanguageModelV4>();

/** String ids resolved, with the global provider they were resolved by:
 * another provider set since resolves again. */
const resolvedIds = new Map<string, { readonly provider: unknown; readonly model: LanguageModelV4 }>();

/** Ids kept resolved at most: a start may name any model id, and each is a
 * provider model object; past this many the map starts over. */
const resolvedIdsMax = 256;

function resolvedModel(internals: AiSdkInternals, model: LanguageModel): LanguageModelV4 {
  if (typeof model === "string") return resolvedId(internals, model);
  let resolved = resolvedModels.get(model);
  if (resolved === undefined) {
    resolved = quietly(() => internals.resolveLanguageModel(model as never));
    resolvedModels.set(model, resolved);
  }
  return resolved;
}

function resolvedId(internals: AiSdkInternals, id: string): LanguageModelV4 {
  const provider = (globalThis as { AI_SDK_DEFAULT_PROVIDER?: unknown }).AI_SDK_DEFAULT_PROVIDER;
  const found = resolvedIds.get(id);
  if (found !== undefined && found.provider === provider) return found.model;
  const model = internals.resolveLanguageModel(id);
  if (resolvedIds.size >= resolvedIdsMax) resolvedIds.clear();
  resolvedIds.set(id, { provider, model });
  return model;
}

/** Resolving a v2 model logs the SDK's compatibility warning; the direct
 * call logs it at each call instead, as `generateText` does (below), so the
 * one-time resolution logs nothing. */
function quietly<T>(resolve: () => T): T {
  const global = globalThis as { AI_SDK_LOG_WARNINGS?: unknown };
  const set = Object.hasOwn(global, "AI_SDK_LOG_WARNINGS");
  const logger = global.AI_SDK_LOG_WARNINGS;
  global.AI_SDK_LOG_WARNINGS = false;
  try {
    return resolve();
  } finally {
    if (set) global.AI_SDK_LOG_WARNINGS = logger;
    else delete global.AI_SDK_LOG_WARNINGS;
  }
}

const v2CompatibilityWarnings = Object.freeze([
  Object.freeze({
    type: "compatibility" as const,
    feature: "specificationVersion",
    details: "Using v2 specification compatibility mode. Some features may not be available.",
  }),
]);

// -- the call ------------------------------------------------------------------------

/** One call: the plan's model, instructions and tools unless `overrides`
 * changes them (a start's model, `prepareCall`'s and `prepareStep`'s
 * answers: their model, instructions, tool choice, active tools, provider
 * options; never their messages, which model.ts sends to `generateText`). */
export async function directStep(
  plan: DirectCallPlan,
  messages: ModelMessages,
  signal: AbortSignal,
  overrides: DirectCallOverrides | undefined,
): Promise<DirectStep> {
  const { internals } = plan;
  const given = overrides?.model ?? plan.model;
  if (typeof given === "object" && given.specificationVersion === "v2") {
    internals.logWarnings({ warnings: v2CompatibilityWarnings as never, provider: given.provider, model: given.modelId });
  }
  const model = resolvedModel(internals, given);
  const call = overrides === undefined ? plan : await overriddenCall(plan, overrides);
  const prompt = await internals.standardizePrompt({ allowSystemInMessages: true, system: call.instructions, messages });
  try {
    return await answer(plan, call, model, prompt.messages, signal);
  } catch (error) {
    throw gatewayErrorOf(plan.ai, error);
  }
}

/** What a call sends that overrides may change. */
interface CallParts {
  readonly instructions: string | undefined;
  readonly modelTools: ToolSet | undefined;
  readonly stepTools: LanguageModelV4FunctionTool[] | undefined;
  readonly toolChoice: LanguageModelV4ToolChoice;
  readonly providerOptions: LanguageModelV4CallOptions["providerOptions"];
}

/** As model.ts's `overriddenOptions` gives them to `generateText`: a tool
 * choice only where the definition has tools, the provider options
 * replaced, not merged (the start's are merged into them before). */
async function overriddenCall(plan: DirectCallPlan, overrides: DirectCallOverrides): Promise<CallParts> {
  const { system, toolChoice, activeTools, providerOptions } = overrides;
  const modelTools = activeTools === undefined ? plan.modelTools : activeToolsOf(plan.tools, activeTools);
  return {
    instructions: system ?? plan.instructions,
    modelTools,
    stepTools: activeTools === undefined ? plan.stepTools : await stepToolsOf(plan.internals, modelTools, plan.toolOrder),
    toolChoice: toolChoice !== undefined && plan.tools !== undefined ? plan.internals.prepareToolChoice({ toolChoice: toolChoice as never }) : plan.toolChoice,
    providerOptions: (providerOptions ?? plan.providerOptions) as LanguageModelV4CallOptions["providerOptions"],
  };
}

async function answer(plan: DirectCallPlan, call: CallParts, model: LanguageModelV4, messages: ModelMessages, signal: AbortSignal): Promise<DirectStep> {
  const { internals, settings } = plan;
  const prompt = await internals.convertToLanguageModelPrompt({
    prompt: { instructions: call.instructions, messages },
    supportedUrls: await model.supportedUrls,
    download: undefined,
    abortSignal: signal,
    provider: model.provider.split(".")[0]!,
  });
  // The options `generateText` passes, key for key. A provider that does not
  // heed the signal does not hold the call past it.
  const result = await untilAborted(
    signal,
    model.doGenerate({
      maxOutputTokens: settings.maxOutputTokens,
      temperature: settings.temperature,
      topP: settings.topP,
      topK: settings.topK,
      presencePenalty: settings.presencePenalty,
      frequencyPenalty: settings.frequencyPenalty,
      stopSequences: settings.stopSequences,
      seed: settings.seed,
      reasoning: settings.reasoning,
      tools: call.stepTools,
      toolChoice: call.toolChoice,
      responseFormat: undefined,
      prompt,
      providerOptions: call.providerOptions,
      abortSignal: signal,
      headers: plan.headers,
    } as LanguageModelV4CallOptions),
  );
  const usage = internals.asLanguageModelUsage(result.usage);
  const toolCalls = await Promise.all(
    result.content
      .filter((part) => part.type === "tool-call")
      .map((toolCall) =>
        internals.parseToolCall({
          toolCall,
          tools: call.modelTools as never,
          repairToolCall: undefined,
          refineToolInput: undefined,
          instructions: call.instructions,
          messages,
          abortSignal: signal,
        }),
      ),
  );
  assertToolChoiceKept(plan.ai, call.toolChoice, result, toolCalls, model);
  const content = await internals.convertLanguageModelContent({
    content: result.content,
    toolCalls,
    toolOutputs: [],
    toolApprovalRequests: [],
    toolApprovalResponses: [],
    tools: plan.tools as never,
    download: undefined,
    abortSignal: signal,
    // Read only for a file part's data: an answer without one makes none.
    generatedFileDataCache: result.content.some(isFilePart) ? new WeakMap() : undefined,
  } as never);
  internals.logWarnings({ warnings: result.warnings ?? [], provider: model.provider, model: model.modelId });
  return { content, usage, finishReason: result.finishReason.unified };
}

/** The calls waiting on each signal, for `untilAborted`: a signal gets one
 * "abort" listener, at its first call, that fails every call waiting then.
 * A session's signal serves all of its model calls, and Node's
 * `addEventListener`/`removeEventListener` per call (its options checked,
 * a listener record made and unlinked) cost more than a set's add and
 * delete (docs/decisions/0115). */
const abortWaiters = new WeakMap<AbortSignal, Set<(reason: unknown) => void>>();

/** `answer`, or the signal's reason once it fires (whichever is first). */
function untilAborted<T>(signal: AbortSignal, answer: PromiseLike<T>): Promise<T> {
  if (signal.aborted) {
    Promise.resolve(answer).then(undefined, () => undefined); // its own failure comes after the abort's
    return Promise.reject(signal.reason);
  }
  const waiters = abortWaitersOf(signal);
  return new Promise<T>((resolve, reject) => {
    waiters.add(reject);
    Promise.resolve(answer).then(
      (value) => {
        waiters.delete(reject);
        resolve(value);
      },
      (error: unknown) => {
        waiters.delete(reject);
        reject(error);
      },
    );
  });
}

function abortWaitersOf(signal: AbortSignal): Set<(reason: unknown) => void> {
  let waiters = abortWaiters.get(signal);
  if (waiters === undefined) {
    const added = new Set<(reason: unknown) => void>();
    signal.addEventListener(
      "abort",
      () => {
        for (const reject of added) reject(signal.reason);
        added.clear();
      },
      { once: true },
    );
    abortWaiters.set(signal, added);
    waiters = added;
  }
  return waiters;
}

/** The content parts whose data `convertLanguageModelContent` resolves
 * through its `generatedFileDataCache`. */
function isFilePart(part: { readonly type: string }): boolean {
  return part.type === "file" || part.type === "reasoning-file";
}

/** `generateText`'s check of a tool choice other than `auto`: a `none`
 * answered with a tool call, or a `required` or named tool not called
 * (unless the answer was interrupted), is its `ToolChoiceViolationError`. */
function assertToolChoiceKept(
  ai: AiSdk,
  toolChoice: LanguageModelV4ToolChoice,
  result: Awaited<ReturnType<LanguageModelV4["doGenerate"]>>,
  toolCalls: readonly { readonly toolName: string }[],
  model: LanguageModelV4,
): void {
  if (toolChoice.type === "auto") return;
  const kept =
    toolChoice.type === "none"
      ? toolCalls.length === 0
      : result.finishReason.unified === "interrupted" || toolCalls.some((call) => toolChoice.type === "required" || call.toolName === toolChoice.toolName);
  if (kept) return;
  throw new ai.ToolChoiceViolationError({
    toolChoice: toolChoice as never,
    finishReason: result.finishReason.unified,
    provider: model.provider,
    modelId: model.modelId,
    content: result.content as never,
  });
}

/** `generateText`'s `wrapGatewayError` (not exported): the AI Gateway's
 * authentication error becomes the SDK's explanation of what to set. */
function gatewayErrorOf(ai: AiSdk, error: unknown): unknown {
  if (!isGatewayAuthenticationError(error)) return error;
  const moreInfoURL = "https://ai-sdk.dev/unauthenticated-ai-gateway";
  if (process?.env.NODE_ENV === "production") {
    return new ai.AISDKError({
      name: "GatewayError",
      message: `Unauthenticated. Configure AI_GATEWAY_API_KEY or use a provider module. Learn more: ${moreInfoURL}`,
    });
  }
  return Object.assign(
    new Error(`\u001b[1m\u001b[31mUnauthenticated request to AI Gateway.\u001b[0m

To authenticate, set the \u001b[33mAI_GATEWAY_API_KEY\u001b[0m environment variable with your API key.

Alternatively, you can use a provider module instead of the AI Gateway.

Learn more: \u001b[34m${moreInfoURL}\u001b[0m

`),
    { name: "GatewayAuthenticationError" },
  );
}

const gatewayErrorMarker = Symbol.for("vercel.ai.gateway.error");
const gatewayAuthenticationMarker = Symbol.for("vercel.ai.gateway.error.GatewayAuthenticationError");

function isGatewayAuthenticationError(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const marked = error as { readonly [key: symbol]: unknown };
  return marked[gatewayErrorMarker] === true && gatewayAuthenticationMarker in error;
}

function isRecord(value: unknown): value is LooseRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
