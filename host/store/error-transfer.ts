// How a typed error crosses the offload worker: as a plain record (code,
// message, ids, details), rebuilt on the calling thread into the class its
// code names, so `instanceof ExecutionRehydrationRequiredError`,
// `ApprovalMismatchError`, `StoreError`, `InvalidInputError` and
// `AgentClosedError` keep working.
// The rebuilt error keeps the worker's message exactly (the constructors'
// own wording is not applied twice).

import {
  AgentBusyError,
  AgentClosedError,
  ApprovalMismatchError,
  ExecutionRehydrationRequiredError,
  InvalidInputError,
  OffloadFullError,
  PhronomyError,
  QueueFullError,
  RetryRefusedError,
  SignalRefusedError,
  StoreError,
  type PhronomyErrorCode,
} from "../errors.js";

export interface TransferredError {
  readonly code: PhronomyErrorCode;
  readonly message: string;
  readonly agentId?: string;
  readonly executionId?: string;
  readonly details?: Record<string, unknown>;
}

export function transferError(error: PhronomyError): TransferredError {
  return {
    code: error.code,
    message: error.message,
    ...(error.agentId === undefined ? {} : { agentId: error.agentId }),
    ...(error.executionId === undefined ? {} : { executionId: error.executionId }),
    ...(error.details === undefined ? {} : { details: error.details }),
  };
}

const classesByCode: Partial<Record<PhronomyErrorCode, { prototype: PhronomyError; name: string }>> = {
  EXECUTION_REHYDRATION_REQUIRED: ExecutionRehydrationRequiredError,
  APPROVAL_MISMATCH: ApprovalMismatchError,
  STORE: StoreError,
  INVALID_INPUT: InvalidInputError,
  AGENT_CLOSED: AgentClosedError,
  AGENT_BUSY: AgentBusyError,
  OFFLOAD_FULL: OffloadFullError,
  QUEUE_FULL: QueueFullError,
  RETRY_REFUSED: RetryRefusedError,
  SIGNAL_REFUSED: SignalRefusedError,
};

export function rebuildError(record: TransferredError): PhronomyError {
  const error = new PhronomyError(record.code, record.message, {
    agentId: record.agentId,
    executionId: record.executionId,
    details: record.details,
  });
  const errorClass = classesByCode[record.code];
  if (errorClass !== undefined) {
    Object.setPrototypeOf(error, errorClass.prototype);
    error.name = errorClass.name;
  }
  return error;
}
