// The head of a conversation's queue (conversation-queue.ts): started
// through the core's `Admit` when the core answers `StartHead` — and only
// then (it stays the head while `Admit` answers `StayQueued`), and let go
// once it left the queue. When its preparation fails, the host tells the
// core the store's answer and who holds the conversation (`HeadSettled`),
// and carries out what the core decides: kept (`HeadKept`, then the
// backoff's `RetryHeadAfter` and `HeadRetryDue`, or `FollowQueued`),
// taken by another process (`HeadTaken`), or left.
// When the store says another process holds the conversation, the core
// is told (`ConversationOwned(elsewhere)`) and its `FollowQueued` makes
// the Runs of the messages queued here follow them (docs/decisions/0062).

import { AdmissionSource, AdmissionVerdict, HeadOutcome, MessageKind as M, Ownership, ResultCode } from "../../assembly/abi.js";
import type { PhronomyError } from "../errors.js";
import { admit } from "./admission.js";
import { settleWaiterWithError } from "./delivery.js";
import { heldEpochOf, leasingStoreOf } from "./leases.js";
import { partitionedStoreOf } from "./partition-takeover.js";
import type { AgentEntry, StartRequest } from "./requests.js";
import { Waiter } from "./run.js";
import type { Conversation, QueuedItem, QueueState } from "./queue-state.js";
import { busyPolicyOf, refusal, storeAnswerOf } from "./queue-words.js";

/** A start ended by its preparation (on the loop, inside the apply of its
 * `DeliverStartFailure`). A queue head `Admit` let start is told to the
 * core as facts: the store's answer (`headOutcomeOf`) and who the store
 * says holds the conversation now. The core decides what becomes of it:
 * kept (`HeadKept`: still queued in the store — the preparation removes it
 * only when it commits — so telling its Run "nothing was written" would be
 * false: it would run later anyway, after newer ones, docs/decisions/0058),
 * taken (`HeadTaken`: another process prepared it), or left (its Run is
 * told the error, as any start's). True when the core kept or let it
 * follow: its Run is not told. If the preparation did commit after all
 * (its outcome unknown), the recovery that follows finds the execution and
 * `restore` makes the Run follow it. */
export function headFailed(queues: QueueState, request: StartRequest, error: PhronomyError): boolean {
  const agent = queues.headsStarting.get(request);
  if (agent === undefined) return false;
  queues.headsStarting.delete(request);
  const settling = { request, agent, answered: false };
  queues.settling = settling;
  try {
    const ownership = heldElsewhere(queues, agent.id) ? Ownership.Elsewhere : Ownership.Here;
    queues.environment.coordinator.apply(M.HeadSettled, agent.slot, agent.generation, headOutcomeOf(queues, request, error), ownership);
  } finally {
    queues.settling = undefined;
  }
  return settling.answered;
}

/** The store's answer to a head's preparation, as the fact the core is
 * told. A head this process no longer keeps — its queues closed, its Run
 * handed on, its cancel written meanwhile (that preparation then finds the
 * id taken) — cannot stay queued here: `Refused`. */
function headOutcomeOf(queues: QueueState, request: StartRequest, error: PhronomyError): HeadOutcome {
  const item = startingItem(queues, request);
  if (queues.closed || item === undefined) return HeadOutcome.Refused;
  const answer = storeAnswerOf(error);
  return item.state === "queued" || answer === HeadOutcome.ExecutionExists ? answer : HeadOutcome.Refused;
}

/** The message of a head being started, while its Run is the request's. */
function startingItem(queues: QueueState, request: StartRequest): QueuedItem | undefined {
  const item = queues.starting.get(request.executionId ?? "");
  return item !== undefined && item.waiter === request.waiter ? item : undefined;
}

/** The head whose `HeadSettled` `headFailed` is applying, when the core's
 * answer names its conversation: that answer is carried out on it. */
function answeredHead(queues: QueueState, agent: AgentEntry): QueuedItem | undefined {
  const settling = queues.settling;
  if (settling === undefined || settling.agent.slot !== agent.slot || settling.agent.generation !== agent.generation) return undefined;
  const item = startingItem(queues, settling.request);
  if (item !== undefined) settling.answered = true;
  return item;
}

/** Effect HeadKept (inside the `HeadSettled` of `headFailed`): the head is
 * still queued in the store, and the head again. It keeps its place here
 * (this process may take the conversation back, and then runs it first):
 * counted queued again by the core, which says in the same apply where it
 * waits — `RetryHeadAfter`, `FollowQueued` (its Run, and those behind it,
 * follow it to whoever holds the conversation next), or nothing until the
 * conversation is ready again. Bookkeeping only. */
export function headKept(queues: QueueState, agent: AgentEntry): void {
  const item = answeredHead(queues, agent);
  if (item === undefined) return;
  queues.starting.delete(item.executionId);
  queues.items.set(item.executionId, item);
  queues.conversationOf(item.agent.id).items.unshift(item);
}

/** Effect HeadTaken (inside the `HeadSettled` of `headFailed`): another
 * process that held the conversation meanwhile took the message from the
 * queue and prepared it (this one's preparation was in flight, or was
 * held back). The message runs as that execution: its Run follows it,
 * nothing is written terminal, and the core offered the next head.
 * Whoever holds the conversation recovers the execution (here: the
 * takeover's recovery, asked again while this preparation was in flight). */
export function headTaken(queues: QueueState, agent: AgentEntry): void {
  const item = answeredHead(queues, agent);
  if (item === undefined) return;
  queues.starting.delete(item.executionId);
  queues.environment.followElsewhere(item.agent.id, item.executionId, item.waiter);
  admissionReleased(queues, item.agent);
}

/** Effect RetryHeadAfter (on the loop, inside an apply): the store failed
 * the head's preparation; once the core's backoff is over it is told
 * (`HeadRetryDue`), and answers `StartHead` if the head is still due. */
export function retryHeadAfter(queues: QueueState, agent: AgentEntry, delayMs: number): void {
  setTimeout(() => {
    if (queues.closed || queues.environment.closed) return;
    const { coordinator, loop } = queues.environment;
    loop.post(() => coordinator.apply(M.HeadRetryDue, agent.slot, agent.generation), { label: `the queue head of agent "${agent.id}" due again` });
  }, delayMs).unref();
}

/** Tells the core a message it counts queued can be started now (on the
 * loop): its enqueue committed and its place is known, or its cancel was
 * not written. The core answers `StartHead` when the head is due. */
export function messageWritten(queues: QueueState, agent: AgentEntry): void {
  queues.environment.coordinator.apply(M.MessageWritten, agent.slot, agent.generation);
}

/** Tells the core the agent's admission was released (posted): the
 * coordinator does not, for a start `headFailed` took (the core answered
 * the head's `HeadSettled` already; this asks again once the preparation's
 * turn is over, as for any start that ended). */
function admissionReleased(queues: QueueState, agent: AgentEntry): void {
  const { coordinator, loop } = queues.environment;
  loop.post(() => coordinator.apply(M.AdmissionReleased, agent.slot, agent.generation), { label: `the admission of agent "${agent.id}" released` });
}

/** A start was installed or the core refused it (on the loop): a head
 * `Admit` let start left the queue (`HeadSettled(left)`, once). False. */
export function headLeft(queues: QueueState, request: StartRequest): false {
  const agent = queues.headsStarting.get(request);
  if (agent === undefined) return false;
  queues.headsStarting.delete(request);
  queues.environment.coordinator.apply(M.HeadSettled, agent.slot, agent.generation, HeadOutcome.Left);
  return false;
}

/** On a leasing store, whether the store says this process does not hold
 * the conversation's lease now (another process does, or nobody). A lease
 * that lapsed here and that this process takes back at its next tick (its
 * partition settling, docs/decisions/0055) is not held elsewhere: the
 * start that meets it waits for the settling (`LeaseSettling`). */
export function heldElsewhere(queues: QueueState, agentId: string): boolean {
  const { store } = queues.environment;
  if (leasingStoreOf(store) === undefined || heldEpochOf(store, agentId) !== undefined) return false;
  return partitionedStoreOf(store)?.partitionSettling(agentId) === undefined;
}

/** Tells the core the conversation is owned elsewhere (on the loop): a
 * store fact the host learned — a lease lost, a head refused for the
 * owner's lease, a cancel not written, a queue read back — reported
 * every time. The core answers `FollowQueued` while messages are counted
 * queued here (`followQueued` carries it out, in the same apply). */
export function tellOwnedElsewhere(queues: QueueState, agent: AgentEntry): void {
  queues.environment.coordinator.apply(M.ConversationOwned, agent.slot, agent.generation, Ownership.Elsewhere);
}

/** `tellOwnedElsewhere` when the store says so (`heldElsewhere`): true if told. */
export function tellIfHeldElsewhere(queues: QueueState, agent: AgentEntry): boolean {
  if (!heldElsewhere(queues, agent.id)) return false;
  tellOwnedElsewhere(queues, agent);
  return true;
}

/** Effect FollowQueued (on the loop): the core records the conversation
 * owned elsewhere with messages queued here. Each one durable here whose
 * Run has not followed it yet follows it now; it keeps its place and its
 * count (it is still queued in the store, and runs here first if this
 * process takes the conversation back). A message still being written,
 * or being cancelled, follows once that settles and the store is asked
 * again (`written`, `cancelFailed`). */
export function followQueued(queues: QueueState, agent: AgentEntry | undefined): void {
  if (agent === undefined) return;
  for (const item of queues.conversations.get(agent.id)?.items ?? []) {
    if (item.state === "queued" && item.elsewhere !== true) followElsewhere(queues, item);
  }
}

/** The message may run at another process: its Run follows it wherever
 * it runs, and the message keeps its place here under a waiter of this
 * process's own (as a queue restored from the store has). True. */
export function followElsewhere(queues: QueueState, item: QueuedItem): true {
  const followed = item.waiter;
  item.elsewhere = true;
  item.waiter = new Waiter(item.agent.id, undefined);
  item.waiter.knowExecutionId(item.executionId);
  queues.steps.cancelDurablyOnFailure(item);
  queues.environment.followElsewhere(item.agent.id, item.executionId, followed);
  return true;
}

/** The core's `StartHead` (on the loop, inside an apply): a message is
 * queued, the conversation is ready, no execution holds its admission and
 * no head is starting — its head is started next, posted. */
export function headDue(queues: QueueState, agent: AgentEntry): void {
  queues.environment.loop.post(() => startHead(queues, agent), { label: `the next queued message of agent "${agent.id}"` });
}

/** Starts the conversation's head as the core's `Admit` answers (on the
 * loop), only on the core's `StartHead` (`headDue`): it runs, stays the
 * head (the conversation is busy, recovering, or held), or is refused
 * (closed). The one check here is I/O: a head not durable yet (being
 * written, being cancelled, its place still being read: `placing`) is not
 * started — the core is told once it can be (`messageWritten`). `of`
 * names the conversation only: the head is started under its own agent
 * entry (one of an entry let go since names a stale one, whose `Admit`
 * the core refuses). */
function startHead(queues: QueueState, of: AgentEntry): void {
  if (queues.closed || queues.environment.closed) return;
  const conversation = queues.conversations.get(of.id);
  const head = conversation?.items[0];
  if (conversation === undefined || head === undefined || head.state !== "queued" || head.placing === true) return;
  const { agent } = head;
  if (head.options.signal?.aborted) return queues.steps.cancelAborted(head);
  const request = headRequest(queues, agent, head);
  const { coordinator } = queues.environment;
  const admission = admit(coordinator, request, AdmissionSource.QueueHead, busyPolicyOf(request), { queueKept: true, canFile: false });
  // Refused: its Run was told, as a refused Start's, and it leaves the
  // queue — counted out (the core drops the count of a stale entry).
  if (admission === undefined) return headRefused(queues, conversation, head);
  if (admission.verdict === AdmissionVerdict.RunHere) return runHead(queues, conversation, head, request, admission.handle);
  coordinator.requests.take(admission.handle);
  if (admission.verdict !== AdmissionVerdict.RefuseClosed) return; // StayQueued: busy; offered again on the core's StartHead
  conversation.items.shift();
  queues.counted(agent, -1);
  settleWaiterWithError(head.waiter, refusal(request, ResultCode.AgentClosed), queues.settings);
  headGone(queues, conversation, head);
}

/** The core refused the head's `Admit` outright (its Run was told): it
 * leaves the queue, and the core counts it out. */
function headRefused(queues: QueueState, conversation: Conversation, head: QueuedItem): void {
  conversation.items.shift();
  queues.counted(head.agent, -1);
  headGone(queues, conversation, head);
}

/** The head's `Start`, with its budget starting now, when it leaves the queue. */
function headRequest(queues: QueueState, agent: AgentEntry, head: QueuedItem): StartRequest {
  const timeoutMs = head.options.timeoutMs ?? agent.definition.timeoutMs;
  return {
    type: "start",
    agent,
    waiter: head.waiter,
    input: head.input,
    inputMessages: head.inputMessages,
    options: head.options,
    deadline: timeoutMs !== undefined ? queues.settings.now() + timeoutMs : undefined,
    executionId: head.executionId,
    // Checked when queued here (docs/decisions/0116).
    ...(head.inputVerdict !== undefined ? { inputVerdict: head.inputVerdict } : {}),
  };
}

/** Applies the head's `Start`: `Admit` let it start (the core counted it
 * out of the queue and waits for `HeadSettled`). */
function runHead(queues: QueueState, conversation: Conversation, head: QueuedItem, request: StartRequest, handle: number): void {
  const { agent } = request;
  conversation.items.shift();
  queues.headsStarting.set(request, agent);
  const { coordinator } = queues.environment;
  // Not cancelled (0): an aborted head never gets here — its cancel is
  // written by the host as a queue cancel (`cancelAborted`, decision 0057).
  coordinator.apply(M.Start, agent.slot, agent.generation, handle, 0);
  headGone(queues, conversation, head);
}

/** The head left the queue: admitted (an execution once prepared), or
 * refused (its Run failed). */
function headGone(queues: QueueState, conversation: Conversation, head: QueuedItem): void {
  const { agent } = head;
  if (conversation.items[0] === head) conversation.items.shift();
  queues.items.delete(head.executionId);
  if (!head.waiter.settled) {
    queues.starting.set(head.executionId, head);
    const waiter = head.waiter;
    // Not once its Run was handed to the follower: it may be started again.
    const done = (): void => {
      if (queues.starting.get(head.executionId) === head && head.waiter === waiter) queues.starting.delete(head.executionId);
    };
    waiter.result.then(done, done);
  }
  // The next head is the core's to offer: a head refused was counted out
  // (`MessageLeft`), one whose Start the core refused settled `Left`, and
  // each answers `StartHead` when the next one is due.
  if (conversation.items.length === 0) queues.drop(conversation, agent.id);
}
