// The approval inbox of a store that has one (PostgreSQL, SQLite;
// docs/decisions/0011, 0031): decisions, cancels, retries and starts filed
// elsewhere for the conversations this process holds are claimed and applied
// here through the local paths, and those of conversations held elsewhere
// are filed. A SQLite owner holds every agent; a SQLite visitor only files.

import { decisionOfFiled } from "./wait-decisions.js";
import { AdmissionSource, AdmissionVerdict, BusyPolicy, ConversationFlag } from "../../assembly/abi.js";
import { AgentBusyError, InvalidInputError, type PhronomyError } from "../errors.js";
import { startTiming } from "../store/start-timing.js";
import type { ExecutionStore } from "../store/store.js";
import { Agent, type AgentHost, type AgentInput } from "./agent.js";
import type { AgentRecoveries } from "./agent-recoveries.js";
import { InboxApplier, inboxStoreOf, type ClaimedDecision } from "./approval-inbox.js";
import { applyFiledCancel, type CancelHost } from "./cancel-by-id.js";
import type { ConversationQueues } from "./conversation-queue.js";
import type { Conversations } from "./conversations.js";
import type { Coordinator } from "./coordinator.js";
import { heldEpochOf, leasingStoreOf, type LeasingStore } from "./leases.js";
import type { StartOptions } from "./options.js";
import { fateOfRefused, ran, type FiledStartFate } from "./filed-start-fate.js";
import type { AgentEntry, FiledVerdict } from "./requests.js";
import { partitionedStoreOf } from "./partition-takeover.js";
import { RemoteResumes } from "./remote-resume.js";
import { RemoteStarts, startInboxStoreOf, type StartPlacement } from "./remote-start.js";
import { applyFiledRetry, type RetryHost } from "./retry.js";
import { asPhronomyError } from "./session.js";

/** What the inbox asks of its environment (environment.ts wires it). */
export interface InboxClaimsHost {
  readonly store: ExecutionStore;
  readonly coordinator: Coordinator;
  readonly conversations: Conversations;
  readonly visitor: boolean;
  closed(): boolean;
  /** The environment, as a claimed decision's or start's handle uses it. */
  readonly agents: AgentHost;
  /** Whether a takeover the store noted is not told to the core yet. */
  readonly recoveries: Pick<AgentRecoveries, "takeoverPending">;
  /** Tells the core the conversation is owned elsewhere when the store says so. */
  readonly queues: Pick<ConversationQueues, "leaseLost">;
  cancelHost(): CancelHost;
  retryHost(): RetryHost;
}

export class InboxClaims {
  /** Applies decisions filed elsewhere for the agents held here. */
  applier: InboxApplier | undefined;
  /** Files decisions on agents held elsewhere. */
  remoteResumes: RemoteResumes | undefined;
  /** Starts filed for the processes holding their partitions (docs/decisions/0031). */
  remoteStarts: RemoteStarts | undefined;

  constructor(private readonly host: InboxClaimsHost) {}

  /** Opens the inbox of a store that has one: decisions filed elsewhere
   * for agents held here are applied through the local resume path;
   * `remoteResumes` files the others (where: the core decides). */
  open(leasing: LeasingStore | undefined): void {
    const inbox = inboxStoreOf(this.host.store);
    if (!inbox) return;
    const { settings } = this.host.coordinator;
    this.remoteResumes = new RemoteResumes(inbox, settings);
    if (this.host.visitor) return;
    const starts = startInboxStoreOf(this.host.store);
    // A process that takes no share (`balance: false`, the CLI's commands)
    // runs its own starts or refuses them, as before.
    if (starts !== undefined && leasing !== undefined && starts.balancing) {
      this.remoteStarts = new RemoteStarts(starts, settings);
    }
    const holds = leasing ? (agentId: string, epoch: number) => leasing.leaseOf(agentId)?.epoch === epoch : () => true;
    const partitioned = partitionedStoreOf(this.host.store);
    const partitionHeld = partitioned && ((agentId: string, epoch: number) => partitioned.partitionHeldAt(agentId, epoch));
    // Held at the epoch, renewed in time or not (`heldEpochOf`): a claim
    // of that epoch is still this process's to finish while its admission
    // window lapsed until the next renewal — left, nobody would claim it
    // again at an epoch still held (docs/decisions/0138).
    const heldAt = leasing ? (agentId: string, epoch: number) => leasing.heldEpochOf(agentId) === epoch : holds;
    const mayHold = partitionHeld || heldAt;
    // Conversations not live here: a SQLite owner claims their retries, a
    // PostgreSQL owner their filed starts (a start makes them live).
    this.applier = new InboxApplier(
      inbox,
      (claim) => this.applyClaim(claim),
      (claim) => this.applyFiledStart(claim),
      holds,
      settings.logger,
      settings.core,
      leasing === undefined || this.remoteStarts !== undefined,
      mayHold,
      (agentId) => this.inboxOpen(agentId),
    );
    // The core's OpenInbox and CloseInbox reach it from the coordinator.
    this.host.coordinator.inbox = this.applier;
  }

  /** Whether every decision filed for the conversation is claimed here:
   * the core's answer (`ConversationFlag.InboxOpen`) for one live here.
   * A takeover the store noted that the core does not know yet is about
   * to close it: nothing is claimed for it meanwhile (as a start's `Admit`
   * tells the core first, `beforeAdmit`). */
  private inboxOpen(agentId: string): boolean {
    const entry = this.host.conversations.entryNow(agentId);
    if (entry === undefined || this.host.recoveries.takeoverPending(agentId)) return false;
    return (this.host.coordinator.settings.core.conversation(entry.slot).flags & ConversationFlag.InboxOpen) !== 0;
  }

  /** Where `agent.resume` sends a decision on an execution not live here
   * (on the loop): the core decides (`admissionVerdictOf`, source
   * `Resume`) from the conversation's phase, the store's fact told to it
   * first as a start's is — the approval inbox when it is owned
   * elsewhere; undefined when the decision is this process's to apply. A
   * visitor (docs/decisions/0015) applies none: it files every one. */
  resumePlacementOf(agent: AgentEntry): RemoteResumes | undefined {
    if (this.host.visitor) return this.remoteResumes;
    this.host.queues.leaseLost(agent);
    const { core } = this.host.coordinator.settings;
    const verdict = core.admissionVerdict(core.conversation(agent.slot).phase, AdmissionSource.Resume, BusyPolicy.Reject, 0);
    return verdict === AdmissionVerdict.FileForOwner ? this.remoteResumes : undefined;
  }

  /** The store's facts on where a start can go (docs/decisions/0031,
   * 0062): whether a start can be filed (told to `Admit`), whether the
   * store says this process holds the conversation, the inbox to file it
   * in for the process that does, and the store's refusal of a start
   * here. The core decides; these are the store's facts. */
  placementOf(agentId: string): StartPlacement {
    const { store } = this.host;
    // The same fact as `tellIfHeldElsewhere` reads: an epoch held here.
    const heldHere = heldEpochOf(store, agentId) !== undefined;
    const partitioned = partitionedStoreOf(store);
    const files = this.remoteStarts !== undefined && !this.host.closed() && partitioned?.partitionLapsedHere(agentId) !== true;
    const refusal = (): PhronomyError => leasingStoreOf(store)?.admissionRefusal?.(agentId) ?? AgentBusyError.notOwnedHere(agentId);
    const mover = files ? takingStoreOf(store) : undefined;
    // The move carried by the start's preparation when the store can
    // (docs/decisions/0119): nothing sent now; else a move of its own (0101).
    const takeHere =
      mover === undefined
        ? undefined
        : async (): Promise<void> => {
            if (mover.moveWithPreparation !== undefined) {
              mover.moveWithPreparation(agentId);
              return;
            }
            await mover.takeConversationHere(agentId).catch(() => undefined);
          };
    return { heldHere, inbox: files ? this.remoteStarts : undefined, refusal, ...(takeHere === undefined ? {} : { takeHere }) };
  }

  /** The store keeps filed starts and this process may write to it. */
  filesStarts(): boolean {
    return !this.host.visitor && startInboxStoreOf(this.host.store) !== undefined;
  }

  async close(): Promise<void> {
    await this.remoteStarts?.close();
    await this.remoteResumes?.close();
    await this.applier?.close();
  }

  private applyClaim(claim: ClaimedDecision): Promise<PhronomyError | undefined> {
    if (claim.kind === "cancel") return applyFiledCancel(this.host.cancelHost(), claim.executionId, claim.reason ?? undefined);
    if (claim.kind === "retry") return applyFiledRetry(this.host.retryHost(), claim.executionId, claim.executionRevision);
    const agent = this.host.conversations.handleOf(this.host.agents, claim.agentId);
    if (!agent)
      return Promise.resolve(
        new InvalidInputError(
          `agent "${claim.agentId}" is no longer defined in the process that owns it; decision ${claim.decisionId} on execution ${claim.executionId} was not applied`,
          { agentId: claim.agentId, executionId: claim.executionId },
        ),
      );
    return agent.applyFiledDecision(claim.executionId, { ...decisionOfFiled(claim), filedAs: claim.decisionId });
  }

  /** The owner's side of a start filed by another process
   * (docs/decisions/0031): started here through `agent.start`'s own path
   * (the takeover's admission gate, the busy policy, the fenced
   * preparation) under the execution id it was filed with. Its fate
   * follows the core's last verdict on it (filed-start-fate.ts). */
  private applyFiledStart(claim: ClaimedDecision): Promise<FiledStartFate> {
    const context = { agentId: claim.agentId, executionId: claim.executionId };
    const start = claim.start;
    if (start === undefined) return refused(new InvalidInputError(`the start filed as execution ${claim.executionId} carries no input`, context));
    const { conversations } = this.host;
    const kind = conversations.liveKind(claim.agentId) ?? conversations.kindOf(claim.agentId, start.definition);
    if (kind === undefined) {
      const define = start.definition !== undefined ? `the definition named "${start.definition}" is` : `agent "${claim.agentId}" is`;
      return refused(
        new InvalidInputError(
          `${define} not defined in the process that holds the conversation's partition (${this.host.store.path}); the start filed as execution ${claim.executionId} was not run — define it in every process that may own it`,
          { ...context, details: { reason: "agent_not_defined" } },
        ),
      );
    }
    const agent = new Agent({ environment: this.host.agents, kind, ready: Promise.resolve() }, claim.agentId);
    const filed: FiledVerdict = { verdict: undefined };
    const run = agent.startFiled(start.input as unknown as AgentInput, start.options as StartOptions, claim.executionId, filed);
    if (startTiming.enabled) void run.result.finally(() => startTiming.mark(claim.executionId, "ended")).catch(() => undefined);
    return run.executionId.then(
      () => ran,
      (error: unknown) =>
        fateOfRefused(this.host.coordinator.settings.core, asPhronomyError(error, "INTERNAL"), filed.verdict, () =>
          this.host.agents.admittedAs(claim.executionId),
        ),
    );
  }
}

function refused(error: PhronomyError): Promise<FiledStartFate> {
  return Promise.resolve({ kind: "refused", error });
}

/** A store that moves a conversation with nothing anywhere to this process
 * (`takeIdleHere`, docs/decisions/0101), when it does now: by a move of its
 * own, or one its preparation carries (`moveWithPreparation`, 0119). */
interface TakingStore {
  takeConversationHere(agentId: string): Promise<unknown>;
  moveWithPreparation?(agentId: string): boolean;
}

function takingStoreOf(store: object): TakingStore | undefined {
  const mover = store as Partial<TakingStore & { takesIdleHere(): boolean }>;
  return typeof mover.takesIdleHere === "function" && mover.takesIdleHere() && typeof mover.takeConversationHere === "function"
    ? (mover as TakingStore)
    : undefined;
}
