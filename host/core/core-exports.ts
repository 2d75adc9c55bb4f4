// The raw exports of core.wasm, typed. Every function takes and returns
// integers only, so the host calls them directly: no bindings layer, no
// loader wrapper on the hot path (docs/decisions/0001-direct-wasm-exports.md).

export interface CoreExports {
  readonly memory: WebAssembly.Memory;
  init(agentsMax: number, executionsMax: number): number;
  apply(kind: number, a: number, b: number, c: number, d: number, e: number, f: number, g: number): number;
  effectBufferPointer(): number;
  agentTablePointer(): number;
  executionTablePointer(): number;
  executionTableCapacity(): number;
  agentHighWater(): number;
  executionHighWater(): number;
  liveExecutionCount(): number;
  admittingAgentCount(): number;
  isDraining(): number;
  nextOwnerTokenValue(): number;
  nextSessionValue(): number;
  executionHeldForRecovery(slot: number): number;
  executionAtRest(slot: number): number;
  conversationAtRest(slot: number): number;
  fsmTransition(phase: number, event: number): number;
  continuationPhase(continuation: number, phase: number): number;
  conversationTransition(phase: number, event: number): number;
  admissionVerdict(phase: number, source: number, policy: number, situation: number): number;
  byIdVerdict(source: number, facts: number): number;
  queuedRunVerdict(answer: number): number;
  childStartVerdict(answer: number, facts: number): number;
  filedStartVerdict(answer: number, facts: number): number;
  keyedStartVerdict(answer: number, facts: number): number;
  dueFireVerdict(facts: number): number;
  storedSignalVerdict(facts: number): number;
  claimedDecisionVerdict(answer: number, facts: number): number;
  claimedStartVerdict(fate: number, facts: number): number;
  enqueueRefusalVerdict(answer: number, facts: number): number;
  refusedStartVerdict(answer: number, facts: number): number;
  cancelRoundVerdict(answer: number, facts: number, round: number): number;
  filedDecisionVerdict(facts: number): number;
  filedStartFollowVerdict(facts: number): number;
  observedRowVerdict(facts: number): number;
  durableWatchVerdict(facts: number): number;
  failedAttemptVerdict(facts: number, number: number, maxRetries: number): number;
  scheduleClaimVerdict(facts: number): number;
  scheduleFiringVerdict(facts: number, answer: number): number;
  toolCallsToStart(calls: number, started: number, settled: number, limit: number, finished: number): number;
  replaceVerdict(facts: number): number;
  turnCallVerdict(facts: number): number;
  /** TESTING ONLY (the differential fuzz near the u32 wrap): see assembly/index.ts. */
  testingSeedCounters(ownerToken: number, session: number, generation: number): number;
}

/** Reads an AssemblyScript string (UTF-16, byte length at pointer - 4) out
 * of the core's memory, for abort messages. */
export function readCoreString(memory: WebAssembly.Memory, pointer: number): string {
  if (pointer === 0) return "";
  const bytes = new Uint32Array(memory.buffer, pointer - 4, 1)[0]!;
  return String.fromCharCode(...new Uint16Array(memory.buffer, pointer, bytes >>> 1));
}

/** Instantiates one core. Each environment gets its own instance (its own
 * memory and tables); the compiled module may be shared. */
export function instantiateCore(module: WebAssembly.Module): CoreExports {
  let memory: WebAssembly.Memory | undefined;
  const imports = {
    env: {
      abort(message: number, file: number, line: number, column: number): never {
        const text = memory ? `${readCoreString(memory, message)} at ${readCoreString(memory, file)}:${line}:${column}` : "abort";
        throw new Error(`phronomy core assertion failed: ${text}`);
      },
    },
  };
  const instance = new WebAssembly.Instance(module, imports);
  const exports = instance.exports as unknown as CoreExports;
  memory = exports.memory;
  return exports;
}
