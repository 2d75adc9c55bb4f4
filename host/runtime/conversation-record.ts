// One conversation live here, as the conversations' bookkeeping
// (conversations.ts) keeps it: once registered it is its own core entry
// (an `AgentEntry`: `entry` is the object itself), so a suspended
// conversation costs one object, not two (docs/decisions/0066). Six
// fields (docs/decisions/0084): what its definition gives (settings,
// tools, name) is read through `kind` instead of copied, the entry is
// the object once it has a slot, the failure and the first recovery's
// cause share one number, and the readiness promise lives beside it in
// the bookkeeping only while it is pending — 72 bytes on a 64-bit V8
// where the record with its twelve fields was 120.
//
// At rest it is not kept at all (docs/decisions/0092): rebuilt from its
// slot, generation and definition when the conversation is named again.

import type { RecoveryCause } from "../../assembly/abi.js";
import type { ResolvedTool } from "../agent/tools.js";
import type { DefinitionKind } from "./definition-kind.js";
import type { AgentSettings } from "./options.js";
import type { AgentEntry } from "./requests.js";

/** What asks for a conversation's first recovery. */
export type FirstRecoveryCause = RecoveryCause.OpenScan | RecoveryCause.FirstUse | RecoveryCause.PartitionTaken;

/** The bit of `state` set once its registration failed. */
const failedBit = 0x100;
/** The bits of `state` holding the first recovery's cause. */
const causeBits = 0xff;

export class Conversation implements AgentEntry {
  /** Host operations using the entry now. */
  users = 0;
  /** The core's agent slot, −1 until registered. */
  slot = -1;
  generation = 0;
  /** The first recovery's cause, and `failedBit`. */
  private state: number;

  constructor(
    readonly id: string,
    readonly kind: DefinitionKind,
    cause: FirstRecoveryCause,
  ) {
    this.state = cause;
  }

  get definition(): AgentSettings {
    return this.kind.definition;
  }

  get tools(): readonly ResolvedTool[] {
    return this.kind.tools;
  }

  get definitionName(): string | undefined {
    return this.kind.name;
  }

  /** The core entry: the object itself once registered. */
  get entry(): AgentEntry | undefined {
    return this.slot >= 0 ? this : undefined;
  }

  /** Registration failed: the next use tries again. */
  get failed(): boolean {
    return (this.state & failedBit) !== 0;
  }

  markFailed(): void {
    this.state |= failedBit;
  }

  /** What asked for its first recovery: the open scan (its definition), a
   * partition taken in the background, or a first use (docs/decisions/0062). */
  get cause(): FirstRecoveryCause {
    return (this.state & causeBits) as FirstRecoveryCause;
  }

  /** Records the core's slot (`RegisterAgent`): the object is its entry from now on. */
  register(slot: number, generation: number): AgentEntry {
    this.slot = slot;
    this.generation = generation;
    return this;
  }
}
