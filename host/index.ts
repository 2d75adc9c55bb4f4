/**
 * Phronomy for TypeScript: the public API.
 *
 * ```ts
 * const env = await Phronomy.open({ store: "./agents.db" });
 * const support = env.agent({ name: "support", model, tools, instructions });
 * const run = support.conversation(userId).start("Where is order 42?");
 * const result = await run.result;
 * await env.close();
 * ```
 *
 * @module phronomy
 */

import { loadPostgresStore, missingPg } from "./store/load-postgres.js";
import { Environment } from "./runtime/environment.js";
import type { OpenOptions } from "./runtime/open-options.js";
import type { PostgresStoreHandle, PostgresStoreOptions } from "./store/postgres/options.js";
import type { ExecutionStore as Store } from "./store/store.js";
import type { PostgresStoreProbe } from "./store/postgres/exists.js";

/** The entry point: `Phronomy.open(options)` opens an environment. */
export const Phronomy = {
  /** Opens an environment on a store; see `OpenOptions`. */
  open(options: OpenOptions): Promise<Environment> {
    return Environment.open(options);
  },
};

/** The PostgreSQL store (`postgres-store.ts`). Its module, and `pg` with
 * it, is loaded by the first `PostgresStore.open`, never by importing
 * `phronomy`: SQLite users do not load `pg`. The type names the opened
 * store (an `ExecutionStore` with its location; its class's members name
 * `pg`'s types, so they stay out of the package's public types);
 * `instanceof` is not available on this handle. */
export type PostgresStore = Store & PostgresStoreHandle;
/** Opens a PostgreSQL store, or looks whether a schema holds one; `pg` is
 * loaded by the first call. */
export const PostgresStore = {
  /** Opens (creating or migrating its schema) the store at a `postgres://`
   * URL; pass it to `Phronomy.open({ store })`. */
  async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const { PostgresStore: Store } = await loadPostgresStore();
    return Store.open(url, options);
  },
  /** Whether the schema the URL names already holds a Phronomy store;
   * creates and migrates nothing. `displayUrl` (the URL without its
   * password) is what an error message shows. */
  async exists(url: string, displayUrl = url): Promise<PostgresStoreProbe> {
    const { postgresStoreExists } = await import("./store/postgres/exists.js").catch((error: unknown) => {
      throw missingPg(error) ?? error;
    });
    return postgresStoreExists(url, displayUrl);
  },
};
export type { PostgresStoreProbe } from "./store/postgres/exists.js";
export type { PostgresStoreOptions };

export { Environment } from "./runtime/environment.js";
export type { OpenOptions } from "./runtime/open-options.js";
export { Agent, type AgentInput } from "./runtime/agent.js";
export type { HistoryMetadata } from "./runtime/journal-messages.js";
export { DefinedAgent } from "./runtime/defined-agent.js";
export type { CompletedRun, HandedOffRun, Run, RunResult } from "./runtime/run.js";
export type { ExecutionEvent, ExecutionEventType, ApprovalRequest, ChildWait, HandoffRequest, EventListener } from "./runtime/events.js";
export type {
  AgentDefinition,
  ConversationDefinition,
  AgentSettings,
  OutputOf,
  StartOptions,
  Guardrail,
  GuardrailVerdict,
  ApprovalPolicy,
  ApprovalListener,
  CallbackErrorPolicy,
  Logger,
} from "./runtime/options.js";
export { tool, handoff, type ToolSet, type ToolExecutionContext, type ApprovalContext, type AiSdkTool } from "./agent/tools.js";
export { humanInput, type HumanInputOptions } from "./agent/human-input.js";
export { waitForEvent, type WaitForEventOptions } from "./agent/wait-for-event.js";
export type { SignalOptions, SignalResult } from "./runtime/event-signals.js";
export { agentTool, type AgentToolOptions, type NamedDefinition } from "./agent/agent-tool.js";
export type { ChildConversation, ChildAgentSpecification, EventWaitOptions } from "./agent/tools.js";
export { timer, type TimerFired, type TimerOptions } from "./agent/timer.js";
export * from "./errors.js";
export { checkSupportedRuntime } from "./runtime/supported-runtime.js";
export type { ExecutionRow, StoredStep, UsageTotals, Json, ExecutionListFilter, ExecutionStatusName, OutcomeName } from "./store/records.js";
/** A usage as the CLI and the dashboard print it (`12 in · 30 out (8 reasoning) · 42 tokens · 10 cache read`). */
export { usageSummary } from "./words.js";
export { settledWithin, waitingWords, waitKindOf, type WaitKind } from "./words.js";
export type { ExecutionStore } from "./store/store.js";
export type { StoreCapabilities, StoreSignals } from "./store/capabilities.js";
export { SqliteStore, type SqliteStoreOptions } from "./store/sqlite-store.js";
export type { SqliteVisitorStore } from "./store/sqlite-visitor.js";
export type { RecoveredExecution } from "./runtime/recovery.js";
export type { PendingApproval } from "./runtime/admin.js";
export type { ExecutionTree } from "./runtime/execution-tree.js";
export type { RetentionOptions, AgentRetentionOptions, PruneOptions, PruneReport } from "./runtime/retention.js";
export type { CancelOptions, CancelResult } from "./runtime/cancel-by-id.js";
export type { RetryOptions } from "./runtime/retry.js";
export type { RunScheduleOptions, Schedule, ScheduleFiring, ScheduleListFilter, ScheduleOptions } from "./runtime/schedule-words.js";
export type { ScheduledStartOptions, ScheduleFiringOutcome, ScheduleState } from "./store/schedule-records.js";
export {
  Admin,
  adminScanMax,
  type AdminExecutionQuery,
  type AdminCounts,
  type AdminDecision,
  type AdminDefinition,
  type AdminStartOptions,
  type AdminStatus,
  type HeldExecution,
  type StoreOwnerInfo,
} from "./runtime/admin.js";
export { bulkExecutionsMax, type AdminPage, type AdminPageQuery, type BulkAnswer, type BulkSelection } from "./runtime/admin-pages.js";
export type { ExecutionCounts, ExecutionPage, ExecutionPageQuery } from "./store/execution-pages.js";
export type { LanguageModel, LanguageModelObject } from "./agent/model.js";
export type {
  ConversationMessage,
  SystemMessage,
  UserMessage,
  UserContentPart,
  TaggedFileData,
  PartProviderOptions,
  AssistantMessage,
  ToolMessage,
  ToolCall,
  ToolResult,
  ReasoningPart,
} from "./agent/messages.js";
// Types the exports above name, exported so that the reference documents
// them and an application can name them (docs/decisions/0045).
export type { OnBusyPolicy, ResumeDecision } from "./runtime/options.js";
export type {
  AgentStep,
  FinishEvent,
  LoopSettings,
  PrepareCallOptions,
  PrepareCallResult,
  PrepareStepOptions,
  PrepareStepResult,
  StepContentPart,
  StepToolCall,
  StepToolError,
  StepToolResult,
  StepStartEvent,
  StepUsage,
  StopCondition,
  ToolChoice,
  ToolExecutionEndEvent,
  ToolExecutionStartEvent,
} from "./runtime/loop-settings.js";
export type { GenericToolApprovalOptions, SingleToolApprovalOptions, ToolApproval, ToolApprovalStatus } from "./runtime/tool-approval.js";
export type { StartCallSettings } from "./runtime/start-call-settings.js";
export type {
  FunctionTool,
  HandoffTool,
  ToolDefinition,
  ToolOptions,
  HandoffOptions,
  AnyFunctionTool,
  ApprovalPredicate,
  ToModelOutput,
} from "./agent/tools.js";
export type {
  AgentRow,
  ApprovalDecision,
  ExecutionMetadata,
  JournalRecord,
  PhaseName,
  StepKind,
  StepRecord,
  ToolCallRecord,
  PurgeAgentResult,
  PrepareExecutionOperation,
  PrepareExecutionResult,
  ProviderBarrierOperation,
  ToolBarrierOperation,
  TerminalCommitOperation,
  ApprovalCommitOperation,
  ReopenExecutionOperation,
  CommittedRevision,
} from "./store/records.js";
export type { PruneCounts } from "./store/prune.js";
export type { AiSdkSchema, JsonSchema } from "./agent/schema.js";
export type { PostgresStoreHandle } from "./store/postgres/options.js";
export type { CoreLimits } from "./core/machine.js";
export type { OffloadPolicy, OffloadStatistics, WorkerState } from "./store/offload.js";
export type { SynchronousMode } from "./store/sqlite/schema.js";
export type { StoreOwner } from "./store/sqlite/owner-file.js";
export type { StoredError, StoreOperation, StoreResult } from "./store/records.js";
export type { ChatChunk, StreamOptions, ChatMessageMetadata } from "./chat/chat-stream.js";
export { toUIMessageStreamResponse, toServerSentEvents, uiMessageStreamHeaders, executionIdHeader } from "./chat/response.js";
export { approvalIdOf } from "./chat/timeline-chunks.js";
export {
  chatRoutes,
  type ChatRequestContext,
  type ChatRoutes,
  type ChatRoutesAgent,
  type ChatRoutesEnvironment,
  type ChatRoutesOptions,
} from "./chat/routes.js";
export { defineAgent, type AgentModuleContext, type AgentModuleDefinition, type AgentModuleExport } from "./define-agent.js";
