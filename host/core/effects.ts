// Decodes the core's effect buffer into plain TypeScript values. The words
// are `[kind, a, b, c, d]` (assembly/abi.ts, `EffectKind`); each case below
// names the arguments as docs/core.md does.

import { EffectKind } from "../../assembly/abi.js";

export type CoreEffect =
  | { readonly kind: EffectKind.AgentRegistered; readonly agent: number; readonly generation: number }
  | { readonly kind: EffectKind.FailRequest; readonly request: number; readonly code: number }
  | { readonly kind: EffectKind.SubmitPrepare; readonly agent: number; readonly ownerToken: number; readonly request: number }
  | { readonly kind: EffectKind.ExecutionInstalled; readonly execution: number; readonly generation: number; readonly request: number }
  | { readonly kind: EffectKind.StartSession; readonly execution: number; readonly session: number }
  | { readonly kind: EffectKind.SubmitProviderBarrier; readonly execution: number; readonly session: number; readonly expectedRevision: number }
  | { readonly kind: EffectKind.SubmitToolBarrier; readonly execution: number; readonly session: number; readonly expectedRevision: number }
  | { readonly kind: EffectKind.StartProviderCall; readonly execution: number; readonly session: number }
  | { readonly kind: EffectKind.StartToolBatch; readonly execution: number; readonly session: number; readonly toolCount: number }
  | { readonly kind: EffectKind.SetupFailed; readonly execution: number; readonly session: number; readonly failure: number }
  | { readonly kind: EffectKind.RecoveryRequired; readonly slot: number; readonly scope: number; readonly code: number }
  | { readonly kind: EffectKind.DropStale; readonly messageKind: number; readonly code: number }
  | { readonly kind: EffectKind.DeferTerminal; readonly execution: number; readonly session: number }
  | { readonly kind: EffectKind.PostDeferredTerminal; readonly execution: number; readonly session: number }
  | { readonly kind: EffectKind.SubmitTerminalCommit; readonly execution: number; readonly session: number; readonly expectedRevision: number }
  | { readonly kind: EffectKind.RegisterWaiter; readonly execution: number; readonly request: number }
  | { readonly kind: EffectKind.DeliverOutcome; readonly execution: number; readonly outcome: number }
  | { readonly kind: EffectKind.FailWaiters; readonly execution: number; readonly code: number }
  | { readonly kind: EffectKind.ReleaseExecution; readonly execution: number; readonly generation: number }
  | { readonly kind: EffectKind.SubmitApprovalCommit; readonly execution: number; readonly expectedRevision: number; readonly request: number }
  | { readonly kind: EffectKind.ResumeSession; readonly execution: number; readonly session: number; readonly approved: boolean }
  | { readonly kind: EffectKind.ContinueSession; readonly execution: number; readonly session: number; readonly continuation: number }
  | { readonly kind: EffectKind.DeliverStartFailure; readonly request: number; readonly outcome: number }
  | { readonly kind: EffectKind.SubmitCancelCommit; readonly execution: number; readonly expectedRevision: number; readonly request: number }
  | { readonly kind: EffectKind.AdmissionDecided; readonly request: number; readonly verdict: number; readonly agent: number; readonly interrupt: boolean }
  | { readonly kind: EffectKind.ReadRows; readonly agent: number; readonly epoch: number; readonly rows: number; readonly readQueue: boolean }
  | { readonly kind: EffectKind.RecoveryJoined; readonly agent: number; readonly epoch: number }
  | { readonly kind: EffectKind.RetryAfter; readonly agent: number; readonly epoch: number; readonly delayMs: number }
  | { readonly kind: EffectKind.OpenAdmissions; readonly agent: number }
  | { readonly kind: EffectKind.OpenInbox; readonly agent: number; readonly drain: boolean }
  | { readonly kind: EffectKind.CloseInbox; readonly agent: number }
  | { readonly kind: EffectKind.ReadinessChanged; readonly agent: number }
  | { readonly kind: EffectKind.RestoreQueue; readonly agent: number }
  | { readonly kind: EffectKind.StartHead; readonly agent: number }
  | { readonly kind: EffectKind.ReleaseConversation; readonly agent: number; readonly generation: number }
  | { readonly kind: EffectKind.FollowResume; readonly execution: number; readonly request: number }
  | { readonly kind: EffectKind.RecoverBeforeResume; readonly execution: number; readonly request: number }
  | { readonly kind: EffectKind.AwaitSuspensionCommit; readonly execution: number; readonly request: number }
  | { readonly kind: EffectKind.FollowQueued; readonly agent: number; readonly queued: number }
  | { readonly kind: EffectKind.FollowAdmitted; readonly execution: number; readonly generation: number }
  | { readonly kind: EffectKind.RetryHeadAfter; readonly agent: number; readonly delayMs: number }
  | { readonly kind: EffectKind.HeadKept; readonly agent: number }
  | { readonly kind: EffectKind.HeadTaken; readonly agent: number }
  | { readonly kind: EffectKind.RecoveryDue; readonly agent: number; readonly cause: number };

/** Decodes one effect from its five words. Throws on a kind the host does
 * not know: that would be a core/host version mismatch, a programmer error. */
export function decodeEffect(kind: number, a: number, b: number, c: number, d: number): CoreEffect {
  switch (kind as EffectKind) {
    case EffectKind.AgentRegistered:
      return { kind, agent: a, generation: b };
    case EffectKind.FailRequest:
      return { kind, request: a, code: b };
    case EffectKind.SubmitPrepare:
      return { kind, agent: a, ownerToken: b, request: c };
    case EffectKind.ExecutionInstalled:
      return { kind, execution: a, generation: b, request: c };
    case EffectKind.StartSession:
      return { kind, execution: a, session: b };
    case EffectKind.SubmitProviderBarrier:
      return { kind, execution: a, session: b, expectedRevision: c };
    case EffectKind.SubmitToolBarrier:
      return { kind, execution: a, session: b, expectedRevision: c };
    case EffectKind.StartProviderCall:
      return { kind, execution: a, session: b };
    case EffectKind.StartToolBatch:
      return { kind, execution: a, session: b, toolCount: c };
    case EffectKind.SetupFailed:
      return { kind, execution: a, session: b, failure: c };
    case EffectKind.RecoveryRequired:
      return { kind, slot: a, scope: b, code: c };
    case EffectKind.DropStale:
      return { kind, messageKind: a, code: b };
    case EffectKind.DeferTerminal:
      return { kind, execution: a, session: b };
    case EffectKind.PostDeferredTerminal:
      return { kind, execution: a, session: b };
    case EffectKind.SubmitTerminalCommit:
      return { kind, execution: a, session: b, expectedRevision: c };
    case EffectKind.RegisterWaiter:
      return { kind, execution: a, request: b };
    case EffectKind.DeliverOutcome:
      return { kind, execution: a, outcome: b };
    case EffectKind.FailWaiters:
      return { kind, execution: a, code: b };
    case EffectKind.ReleaseExecution:
      return { kind, execution: a, generation: b };
    case EffectKind.SubmitApprovalCommit:
      return { kind, execution: a, expectedRevision: b, request: c };
    case EffectKind.ResumeSession:
      return { kind, execution: a, session: b, approved: c === 1 };
    case EffectKind.ContinueSession:
      return { kind, execution: a, session: b, continuation: c };
    case EffectKind.DeliverStartFailure:
      return { kind, request: a, outcome: b };
    case EffectKind.SubmitCancelCommit:
      return { kind, execution: a, expectedRevision: b, request: c };
    case EffectKind.AdmissionDecided:
      return { kind, request: a, verdict: b, agent: c, interrupt: d === 1 };
    case EffectKind.ReadRows:
      return { kind, agent: a, epoch: b, rows: c, readQueue: d === 1 };
    case EffectKind.RecoveryJoined:
      return { kind, agent: a, epoch: b };
    case EffectKind.RetryAfter:
      return { kind, agent: a, epoch: b, delayMs: c };
    case EffectKind.OpenAdmissions:
      return { kind, agent: a };
    case EffectKind.OpenInbox:
      return { kind, agent: a, drain: b === 1 };
    case EffectKind.CloseInbox:
      return { kind, agent: a };
    case EffectKind.RestoreQueue:
      return { kind, agent: a };
    case EffectKind.StartHead:
      return { kind, agent: a };
    case EffectKind.ReleaseConversation:
      return { kind, agent: a, generation: b };
    case EffectKind.FollowResume:
    case EffectKind.RecoverBeforeResume:
    case EffectKind.AwaitSuspensionCommit:
      return { kind, execution: a, request: b };
    case EffectKind.FollowQueued:
      return { kind, agent: a, queued: b };
    case EffectKind.FollowAdmitted:
      return { kind, execution: a, generation: b };
    case EffectKind.RetryHeadAfter:
      return { kind, agent: a, delayMs: b };
    case EffectKind.HeadKept:
    case EffectKind.HeadTaken:
    case EffectKind.ReadinessChanged:
      return { kind, agent: a };
    case EffectKind.RecoveryDue:
      return { kind, agent: a, cause: b };
    default:
      throw new Error(`core emitted unknown effect kind ${kind}: host and core.wasm are from different builds`);
  }
}

/** Decodes a flat list of effect words (five per effect). */
export function decodeEffectWords(words: readonly number[]): CoreEffect[] {
  const effects: CoreEffect[] = [];
  for (let index = 0; index < words.length; index += 5) {
    effects.push(decodeEffect(words[index]!, words[index + 1]!, words[index + 2]!, words[index + 3]!, words[index + 4]!));
  }
  return effects;
}
