// `env.signal(key, payload)` and the stored signals a wait takes when it
// commits (docs/decisions/0077). The store finds the wait with the key, or
// keeps the signal (`signal-records.ts`); a wait found is resumed through
// the one resume path every decision takes — here, or filed for its owner
// through the approval inbox — so exactly-once is the approval commit's,
// and what a signal may do to which wait is the core's (`ResumeFact`
// `PendingWaitsForEvent`, `GivesSignal`, `SignalStored`).
//
// Rules kept here:
// * A wait that suspends here (live, recovered, or given back) with a key
//   looks for a stored signal after its commit: the store serializes that
//   look with `sendSignal`, so a signal is never between the two.
// * A stored signal offered to a wait is dropped once its resume's commit
//   landed, or once its payload was refused (it could never be taken);
//   refused for any other reason (the environment draining, the
//   conversation moving) it stays offered to that wait, and the next owner
//   offers it again after recovering the wait. The core decides it
//   (`storedSignalVerdict`, docs/decisions/0102) from what the host read.

import { AdmissionSource, AdmissionVerdict, StoredSignalFact, StoredSignalVerdict } from "../../assembly/abi.js";
import type { ControlCore } from "../core/control-core.js";
import { isJson } from "../agent/messages.js";
import { InvalidInputError, type PhronomyError, SignalRefusedError } from "../errors.js";
import { capabilitiesOf } from "../store/capabilities.js";
import type { Json } from "../store/records.js";
import type { SignalStore } from "../store/signal-records.js";
import type { ExecutionStore } from "../store/store.js";
import type { ByIdPlacement, ByIdSource } from "./by-id-placement.js";
import { keyProblem } from "./event-wait.js";
import type { ApprovalRequest } from "./events.js";
import type { Logger } from "./options.js";
import { Waiter, type Run } from "./run.js";
import type { Decision } from "./wait-decisions.js";

/** How long a signal no wait takes yet is kept, unless `keepForMs` says:
 * a day, long enough for a webhook that beats the model's tool call. */
export const signalKeepMsDefault = 24 * 60 * 60 * 1000;
/** The longest `keepForMs`: thirty days. */
export const signalKeepMsMax = 30 * 24 * 60 * 60 * 1000;

/** `env.signal`'s options. */
export interface SignalOptions {
  /** Refuse (`SIGNAL_REFUSED`, `not_waiting`) rather than keep the signal
   * when no wait has the key now. */
  readonly ifWaiting?: boolean;
  /** How long a signal no wait takes yet is kept for the next wait with
   * its key (default a day, at most thirty). */
  readonly keepForMs?: number;
}

/** What `env.signal` did: resumed the wait with the key, or kept the signal
 * for the next wait with it. */
export type SignalResult =
  | { readonly status: "resumed"; readonly key: string; readonly executionId: string; readonly agentId: string; readonly waitId: string }
  | { readonly status: "stored"; readonly key: string; readonly keptUntil: number };

/** A conversation handle, as far as a signal needs one. */
interface Resumable {
  resumeDecided(executionId: string, decision: Decision, applied?: () => void): Run;
}

/** What signals need of the environment. */
export interface EventSignalsHost {
  readonly store: ExecutionStore;
  readonly logger: Logger;
  /** Decides a stored signal's fate (`storedSignalVerdict`, docs/decisions/0102). */
  readonly core: Pick<ControlCore, "storedSignalVerdict">;
  assertOpen(what: string): void;
  agentHandle(agentId: string): Resumable | undefined;
  placeById(source: ByIdSource, agentId: string, here: boolean): Promise<ByIdPlacement>;
}

export class EventSignals {
  /** Waits a stored signal is being offered to now (their approval ids). */
  private readonly offering = new Set<string>();

  constructor(private readonly host: EventSignalsHost) {}

  async signal(key: string, payload: unknown, options: SignalOptions = {}): Promise<SignalResult> {
    const sending = checkSignal(key, payload, options);
    this.host.assertOpen(`env.signal("${key}")`);
    const store = this.signalStore();
    const sent = await store.sendSignal(sending);
    if (sent.kind === "stored") return { status: "stored", key, keptUntil: sent.keptUntil };
    const { executionId, agentId, approvalId } = sent.wait;
    const decision: Decision = { approvalId, approved: true, given: { kind: "signal", callId: undefined, payload: sending.payload } };
    try {
      await this.resume(agentId, executionId, decision);
    } catch (error) {
      throw refusalOf(error as PhronomyError, key);
    }
    return { status: "resumed", key, executionId, agentId, waitId: approvalId };
  }

  /** An event wait suspended here: takes the signal stored for its key, if
   * one came first, and resumes the wait with it. */
  suspended(request: ApprovalRequest): void {
    const { key, approvalId, executionId, agentId } = request;
    if (request.kind !== "event" || key === undefined || this.offering.has(approvalId)) return;
    if (!capabilitiesOf(this.host.store).signals) return;
    const store = this.host.store as ExecutionStore & SignalStore;
    this.offering.add(approvalId);
    const offered = async (): Promise<void> => {
      const payload = await store.takeStoredSignal(key, approvalId, Date.now());
      if (payload === undefined) return;
      const decision: Decision = { approvalId, approved: true, given: { kind: "signal", callId: undefined, payload }, storedSignal: true };
      const handle = this.host.agentHandle(agentId);
      const here = handle !== undefined ? StoredSignalFact.DefinedHere : 0;
      // Kept (no definition here): offered again when the wait is recovered.
      if (handle === undefined || this.signalVerdict(here) !== StoredSignalVerdict.Resume) return;
      try {
        await handle.resumeDecided(executionId, decision).executionId;
      } catch (error) {
        const payloadRefused = (error as { code?: unknown } | null)?.code === "INVALID_INPUT" ? StoredSignalFact.PayloadRefused : 0;
        // Kept: thrown, and told below; offered again when the wait is recovered.
        if (this.signalVerdict(here | StoredSignalFact.Answered | StoredSignalFact.Refused | payloadRefused) !== StoredSignalVerdict.Drop) throw error;
        // A payload its schema refuses can never resume the wait: dropped.
        this.host.logger.warn(
          `[phronomy] the signal stored for key "${key}" was refused by wait ${approvalId} of execution ${executionId} and dropped: ${(error as Error).message}`,
        );
      }
      await store.dropSignal(key, approvalId);
    };
    offered()
      .catch((error: unknown) =>
        this.host.logger.debug?.(
          `[phronomy] the signal stored for key "${key}" was not given to wait ${approvalId} now (it is offered again when the wait is recovered): ${error instanceof Error ? error.message : String(error)}`,
        ),
      )
      .finally(() => this.offering.delete(approvalId));
  }

  /** The core's verdict on a stored signal (`storedSignalVerdict`). */
  private signalVerdict(facts: number): StoredSignalVerdict {
    return this.host.core.storedSignalVerdict(facts) as StoredSignalVerdict;
  }

  private signalStore(): SignalStore {
    if (!capabilitiesOf(this.host.store).signals) {
      throw new InvalidInputError(`env.signal(): the store at ${this.host.store.path} keeps no signals (its capabilities do not declare "signals")`);
    }
    return this.host.store as ExecutionStore & SignalStore;
  }

  /** Resumed here when the conversation is defined here, else filed for
   * the process that holds it, as the core places a resume by id; settles
   * once the resume's commit landed (here, or applied by the owner) or
   * with its refusal. */
  private async resume(agentId: string, executionId: string, decision: Decision): Promise<void> {
    const handle = this.host.agentHandle(agentId);
    const { verdict, inbox } = await this.host.placeById(AdmissionSource.Resume, agentId, handle !== undefined);
    if (verdict === AdmissionVerdict.RunHere && handle !== undefined) return untilApplied((applied) => handle.resumeDecided(executionId, decision, applied));
    if (verdict !== AdmissionVerdict.FileForOwner || inbox === undefined) {
      throw new InvalidInputError(
        `agent "${agentId}" is not defined in this environment, which owns the store: define it (env.agent) before signalling its waits, since the signal runs the execution on here`,
        { agentId, executionId },
      );
    }
    return untilApplied((applied) => {
      const waiter = new Waiter(agentId, undefined);
      inbox.file(agentId, executionId, decision, waiter, applied);
      return waiter;
    });
  }
}

/** Settles once the resume's commit landed, or with its refusal (the
 * Run's result says why; settled after the commit, it is the execution's
 * own end, and the signal was delivered). */
function untilApplied(resume: (applied: () => void) => Run): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const run = resume(resolve);
    run.result.then(() => resolve(), reject);
  });
}

function checkSignal(key: unknown, payload: unknown, options: SignalOptions) {
  const problem = keyProblem(key);
  if (problem !== undefined) throw new InvalidInputError(`env.signal(key, payload): the key ${problem.replace(/^gave/, "is")}`);
  if (payload === undefined || !isJson(payload))
    throw new InvalidInputError(`env.signal("${key as string}", payload): the payload must be plain JSON (it is stored)`);
  if (typeof options !== "object" || options === null)
    throw new InvalidInputError("env.signal(key, payload, options): options must be an object { ifWaiting?, keepForMs? }");
  const unknownKey = Object.keys(options).find((name) => name !== "ifWaiting" && name !== "keepForMs");
  if (unknownKey !== undefined) throw new InvalidInputError(`env.signal(): "${unknownKey}" is not an option; the options are ifWaiting, keepForMs`);
  if (options.ifWaiting !== undefined && typeof options.ifWaiting !== "boolean") throw new InvalidInputError('env.signal(): "ifWaiting" must be true or false');
  const keepForMs = options.keepForMs ?? signalKeepMsDefault;
  if (!Number.isSafeInteger(keepForMs) || keepForMs <= 0 || keepForMs > signalKeepMsMax) {
    throw new InvalidInputError(`env.signal(): "keepForMs" must be a whole number of milliseconds from 1 to ${signalKeepMsMax} (thirty days)`);
  }
  const at = Date.now();
  return { key: key as string, payload: payload as Json, at, keepUntil: at + keepForMs, ifWaiting: options.ifWaiting === true };
}

/** A resume refused because the wait was already resumed or ended (by
 * another signal, a cancel): told as the signal's refusal; a refused
 * payload and the rest as they are. */
function refusalOf(error: PhronomyError, key: string): PhronomyError {
  if (error.code !== "APPROVAL_MISMATCH" && error.code !== "EXECUTION_ENDED" && error.code !== "AGENT_BUSY") return error;
  return new SignalRefusedError(`the wait with key "${key}" was resumed or ended before this signal reached it (${error.message}); nothing was resumed`, {
    reason: "already_signalled",
    key,
    executionId: error.executionId,
    agentId: error.agentId,
    cause: error,
  });
}
