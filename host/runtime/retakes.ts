// A retake: this process holds a conversation's lease again at a later
// epoch than one it lost — taken on demand by a first use's acquire
// (agent-ownership.ts), found held here by a start the core placed
// elsewhere (conversation-queue.ts), or learnt from a write fenced at the
// lost epoch (agent-recoveries.ts). Each reports it (`ConversationRetaken`
// with its cause) and the core decides whether a recovery is due
// (`RecoveryDue`): the host only carries that out, and keeps its own I/O
// check that the lease is still held at the epoch (docs/decisions/0062,
// "Every retake asks the core").

import { EffectKind, MessageKind as M, type RecoveryCause, ResultCode } from "../../assembly/abi.js";
import type { ControlLoop } from "./control-loop.js";
import type { Conversations } from "./conversations.js";
import type { Coordinator } from "./coordinator.js";
import type { AgentEntry } from "./requests.js";

/** The causes a retake reports (any other the core refuses). */
export type RetakeCause = RecoveryCause.Retake | RecoveryCause.FencedWrite | RecoveryCause.Moved;

/** Carries out the core's `RecoveryDue`: the retake's recovery, unless the
 * lease moved again since `epoch` (`AgentRecoveries.recoverAfterRetake`). */
export type RecoverAfterRetake = (agentId: string, epoch: number, cause: RecoveryCause) => void;

/** What a retake posted from off the loop needs. */
export interface RetakeHost {
  readonly loop: ControlLoop;
  readonly coordinator: Coordinator;
  readonly conversations: Pick<Conversations, "liveEntry">;
}

/** On the loop: reports the retake and carries out the core's answer. */
export function tellRetaken(coordinator: Coordinator, entry: AgentEntry, epoch: number, cause: RetakeCause, recover: RecoverAfterRetake): void {
  if (coordinator.apply(M.ConversationRetaken, entry.slot, entry.generation, cause) !== ResultCode.Ok) return;
  // `RecoveryDue` is carried out by nobody inside the apply: the effects
  // read now are the retake's.
  const due = coordinator.settings.core.effects().find((effect) => effect.kind === EffectKind.RecoveryDue);
  if (due?.kind === EffectKind.RecoveryDue) recover(entry.id, epoch, due.cause);
}

/** From anywhere: once the conversation's entry is ready, `tellRetaken`
 * on the loop (nothing when it is not live here). */
export function postRetaken(host: RetakeHost, agentId: string, epoch: number, cause: RetakeCause, recover: RecoverAfterRetake): void {
  void host.conversations.liveEntry(agentId)?.then(
    (entry) => host.loop.post(() => tellRetaken(host.coordinator, entry, epoch, cause, recover), { label: `the retake of conversation "${agentId}"` }),
    () => undefined,
  );
}
