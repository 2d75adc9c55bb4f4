// Names of the ABI's numbers, for logs, errors and the demo. Each table is
// checked by the compiler to name every member of its enum (`satisfies
// Record<…>`), so a new member without a name does not compile.

import { EffectKind, MessageKind, ResultCode } from "../../assembly/abi.js";

const messageKindNames = {
  [MessageKind.RegisterAgent]: "RegisterAgent",
  [MessageKind.CloseAgent]: "CloseAgent",
  [MessageKind.PurgeAgent]: "PurgeAgent",
  [MessageKind.Start]: "Start",
  [MessageKind.InitialPreparationReady]: "InitialPreparationReady",
  [MessageKind.ProviderDispatchReady]: "ProviderDispatchReady",
  [MessageKind.ToolDispatchReady]: "ToolDispatchReady",
  [MessageKind.SessionEvent]: "SessionEvent",
  [MessageKind.OperationSettled]: "OperationSettled",
  [MessageKind.SessionFinished]: "SessionFinished",
  [MessageKind.DeferredTerminal]: "DeferredTerminal",
  [MessageKind.TerminalCommitReady]: "TerminalCommitReady",
  [MessageKind.Resume]: "Resume",
  [MessageKind.ResumeCommitReady]: "ResumeCommitReady",
  [MessageKind.RecoveryInstall]: "RecoveryInstall",
  [MessageKind.ContinueRecovered]: "ContinueRecovered",
  [MessageKind.CancelRequested]: "CancelRequested",
  [MessageKind.AttachWaiter]: "AttachWaiter",
  [MessageKind.SubmissionRefused]: "SubmissionRefused",
  [MessageKind.SetDraining]: "SetDraining",
  [MessageKind.DischargeRecovery]: "DischargeRecovery",
  [MessageKind.DischargeAgentRecovery]: "DischargeAgentRecovery",
  [MessageKind.CancelSuspended]: "CancelSuspended",
  [MessageKind.CancelCommitReady]: "CancelCommitReady",
} satisfies Record<MessageKind, string>;

export function messageKindName(value: number): string {
  return (messageKindNames as Record<number, string>)[value] ?? `MessageKind(${value})`;
}

const resultCodeNames = {
  [ResultCode.Ok]: "Ok",
  [ResultCode.MessageKindUnknown]: "MessageKindUnknown",
  [ResultCode.ArgumentOutOfRange]: "ArgumentOutOfRange",
  [ResultCode.AgentSlotUnknown]: "AgentSlotUnknown",
  [ResultCode.AgentGenerationMustMatch]: "AgentGenerationMustMatch",
  [ResultCode.AgentClosed]: "AgentClosed",
  [ResultCode.AgentAlreadyAdmitted]: "AgentAlreadyAdmitted",
  [ResultCode.AgentAdmissionHeld]: "AgentAdmissionHeld",
  [ResultCode.AgentsFull]: "AgentsFull",
  [ResultCode.RuntimeDraining]: "RuntimeDraining",
  [ResultCode.StartCancelled]: "StartCancelled",
  [ResultCode.ExecutionSlotUnknown]: "ExecutionSlotUnknown",
  [ResultCode.ExecutionGenerationMustMatch]: "ExecutionGenerationMustMatch",
  [ResultCode.ExecutionsFull]: "ExecutionsFull",
  [ResultCode.OwnerTokenMustMatch]: "OwnerTokenMustMatch",
  [ResultCode.RevisionMustMatch]: "RevisionMustMatch",
  [ResultCode.RevisionMustIncrease]: "RevisionMustIncrease",
  [ResultCode.SessionMustMatch]: "SessionMustMatch",
  [ResultCode.PhaseMustMatch]: "PhaseMustMatch",
  [ResultCode.StatusMustMatch]: "StatusMustMatch",
  [ResultCode.AgentMustMatch]: "AgentMustMatch",
  [ResultCode.TransitionUndefined]: "TransitionUndefined",
  [ResultCode.InFlightUnderflow]: "InFlightUnderflow",
  [ResultCode.InFlightFull]: "InFlightFull",
  [ResultCode.WaitersFull]: "WaitersFull",
  [ResultCode.NotQuiescent]: "NotQuiescent",
  [ResultCode.ApprovalMustMatch]: "ApprovalMustMatch",
  [ResultCode.ResumeInProgress]: "ResumeInProgress",
  [ResultCode.ContinuationInvalid]: "ContinuationInvalid",
  [ResultCode.OutcomeUnknown]: "OutcomeUnknown",
  [ResultCode.StoreFailed]: "StoreFailed",
  [ResultCode.RehydrationRequired]: "RehydrationRequired",
  [ResultCode.PreparationNotEstablished]: "PreparationNotEstablished",
  [ResultCode.PreparationTerminal]: "PreparationTerminal",
  [ResultCode.OffloadFull]: "OffloadFull",
  [ResultCode.AdmissionStateMustMatch]: "AdmissionStateMustMatch",
  [ResultCode.TerminalNotDeferred]: "TerminalNotDeferred",
} satisfies Record<ResultCode, string>;

export function resultCodeName(value: number): string {
  return (resultCodeNames as Record<number, string>)[value] ?? `ResultCode(${value})`;
}

const effectKindNames = {
  [EffectKind.AgentRegistered]: "AgentRegistered",
  [EffectKind.FailRequest]: "FailRequest",
  [EffectKind.SubmitPrepare]: "SubmitPrepare",
  [EffectKind.ExecutionInstalled]: "ExecutionInstalled",
  [EffectKind.StartSession]: "StartSession",
  [EffectKind.SubmitProviderBarrier]: "SubmitProviderBarrier",
  [EffectKind.SubmitToolBarrier]: "SubmitToolBarrier",
  [EffectKind.StartProviderCall]: "StartProviderCall",
  [EffectKind.StartToolBatch]: "StartToolBatch",
  [EffectKind.SetupFailed]: "SetupFailed",
  [EffectKind.RecoveryRequired]: "RecoveryRequired",
  [EffectKind.DropStale]: "DropStale",
  [EffectKind.DeferTerminal]: "DeferTerminal",
  [EffectKind.PostDeferredTerminal]: "PostDeferredTerminal",
  [EffectKind.SubmitTerminalCommit]: "SubmitTerminalCommit",
  [EffectKind.RegisterWaiter]: "RegisterWaiter",
  [EffectKind.DeliverOutcome]: "DeliverOutcome",
  [EffectKind.FailWaiters]: "FailWaiters",
  [EffectKind.ReleaseExecution]: "ReleaseExecution",
  [EffectKind.SubmitApprovalCommit]: "SubmitApprovalCommit",
  [EffectKind.ResumeSession]: "ResumeSession",
  [EffectKind.ContinueSession]: "ContinueSession",
  [EffectKind.DeliverStartFailure]: "DeliverStartFailure",
  [EffectKind.SubmitCancelCommit]: "SubmitCancelCommit",
} satisfies Record<EffectKind, string>;

export function effectKindName(value: number): string {
  return (effectKindNames as Record<number, string>)[value] ?? `EffectKind(${value})`;
}
