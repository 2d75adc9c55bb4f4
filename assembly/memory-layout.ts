// Linear memory of the core: where each region starts, and how big it is.
//
//   __heap_base
//   +----------------+------------------------------+-------------------------------+
//   | effect buffer  | agent table                  | execution table               |
//   | count + 16 × 5 | agentsMax × AgentRecord      | capacity × ExecutionRecord    |
//   | words          | (allocated at init; each     | (doubles up to executionsMax) |
//   |                | holds its conversation too)  |                               |
//   +----------------+------------------------------+-------------------------------+
//
// Nothing else lives in linear memory: the runtime is `stub` and the core
// never allocates, so every byte is one of these three regions. Offsets are
// derived from the record sizes in `abi.ts`, never typed twice.
//
// "Allocated at init" is address space, not memory: `memory.grow` gives
// zeroed pages that the engine maps on first write, and the agent table is
// written only up to the high-water mark of slots used. A core on the
// default limits (4,194,304 agents: 96 MiB of table) adds no measurable RSS
// at init; each conversation used touches 24 bytes of it, each live
// execution 20 (docs/decisions/0066, 0104).

import { AgentRecord, EffectLayout, ExecutionRecord } from "./abi";

const PAGE_BYTES: usize = 65536;
const REGION_ALIGNMENT: usize = 16;
/** Execution slots the table starts with: enough for a typical process
 * without a grow, small enough (20 KiB) to cost nothing at start-up. */
const EXECUTION_CAPACITY_INITIAL: u32 = 1024;

const EFFECT_BUFFER_BYTES: usize =
  <usize>EffectLayout.FirstEffectOffset + <usize>EffectLayout.EffectsMax * <usize>EffectLayout.Words * 4;

export let effectBuffer: usize = 0;
export let agentTable: usize = 0;
export let executionTable: usize = 0;
export let executionCapacity: u32 = 0;

@inline function alignUp(value: usize, alignment: usize): usize {
  return (value + alignment - 1) & ~(alignment - 1);
}

/** Grows linear memory so that `end` bytes are addressable. False when the
 * engine refuses to grow. */
function ensureMemory(end: usize): bool {
  const have = <usize>memory.size() * PAGE_BYTES;
  if (end <= have) return true;
  const pages = <i32>((end - have + PAGE_BYTES - 1) / PAGE_BYTES);
  return memory.grow(pages) >= 0;
}

/** Lays out the regions for `agentsMax` agents. False when memory cannot
 * hold them. */
export function layoutRegions(agentsMax: u32, executionsMax: u32): bool {
  effectBuffer = alignUp(__heap_base, REGION_ALIGNMENT);
  agentTable = alignUp(effectBuffer + EFFECT_BUFFER_BYTES, REGION_ALIGNMENT);
  executionTable = alignUp(agentTable + <usize>agentsMax * AgentRecord.Size, REGION_ALIGNMENT);
  const initial = executionsMax < EXECUTION_CAPACITY_INITIAL ? executionsMax : EXECUTION_CAPACITY_INITIAL;
  if (!ensureMemory(executionTable + <usize>initial * ExecutionRecord.Size)) return false;
  executionCapacity = initial;
  return true;
}

/** Makes room for at least `slots` execution records, doubling the table
 * up to `executionsMax`. False when the limit or the engine says no. */
export function reserveExecutionCapacity(slots: u32, executionsMax: u32): bool {
  if (slots <= executionCapacity) return true;
  if (slots > executionsMax) return false;
  let capacity = executionCapacity;
  while (capacity < slots) capacity = capacity <= executionsMax >>> 1 ? capacity << 1 : executionsMax;
  if (!ensureMemory(executionTable + <usize>capacity * ExecutionRecord.Size)) return false;
  executionCapacity = capacity;
  return true;
}
