// Group commit for the PostgreSQL store (SPEC §4.3, issue 7,
// docs/decisions/0012): the statements of concurrent operations
// (`statements.ts`, a member each; consecutive function calls folded into
// one statement, below) travel to the server as ONE simple query, which
// PostgreSQL runs as one transaction: one round trip and one commit for
// the whole group instead of five round trips and a commit per operation.
//
// Rules kept here:
// * At most `groupsInFlight` groups are on their way at once, each on its
//   own pooled connection; what arrives meanwhile waits and leaves as the
//   next group (at most `statementsMax` members). A group starts on the
//   next event-loop round after its first statement arrived (never a
//   microtask: see docs/decisions/0006), so statements submitted together
//   leave together.
// * A statement reports whether it applied (and how, `submit`); a refusal (the compare-and-set
//   matched no row) is not an error and does not disturb its group-mates.
// * A statement that fails (a constraint, a deadlock) aborts its whole
//   group, which wrote nothing then; each member is sent again alone, so
//   the failure reaches only the operation that caused it. A member alone
//   chosen as a deadlock's victim is sent once more (its other party has
//   ended by then): two processes preparing one new conversation, one of
//   them moving it, wait for each other so (docs/decisions/0119).
// * A group's statements run in the order of their partitions (`order`),
//   so every group takes its partitions' fence locks in one order, the
//   order a takeover takes them in (docs/decisions/0042): a group and a
//   takeover never wait for each other in a cycle.
// * Members that are one function call each (`call`: the barriers, the
//   preparations, the terminal and approval commits) travel folded: each
//   run of consecutive calls in the group's order is ONE statement,
//   `SELECT ARRAY[call, call, …]`, whose elements PostgreSQL evaluates in
//   order — so the fence locks are still taken in the group's order — and
//   whose answer is every member's `applied`. The server parses, plans,
//   starts and answers one statement for them instead of one each
//   (docs/decisions/0130). The functions are VOLATILE PL/pgSQL: each of
//   their statements takes a fresh snapshot and sees what the calls before
//   it wrote, as it did when each call was a statement of its own. A
//   member that is not one call (a moving preparation, a terminal commit
//   with child filings) is a statement of its own between them.
// * A lost connection is reported to every member as `ConnectionLost`
//   (with the backend's pid): the group may or may not have committed, and
//   the store reads back each member's outcome (`outcome.ts`).

import type pg from "pg";
import { isConnectionLoss } from "./outcome.js";

/** Groups on their way at once (each holds one pooled connection). */
export const groupsInFlightDefault = 4;
/** Statements in one group at most: bounds the query text and the time a
 * group holds its row locks. */
export const statementsMaxDefault = 64;

export class ConnectionLost extends Error {
  constructor(
    override readonly cause: unknown,
    readonly backendPid: number | undefined,
  ) {
    super(`the database connection was lost: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

/** No connection could be had for a group (the server refused it: "too
 * many clients", starting up; unreachable; the pool's wait timed out):
 * nothing of it was sent. */
export class NotConnected extends Error {
  constructor(override readonly cause: unknown) {
    super(`no connection to the database: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

interface Member {
  readonly sql: string;
  /** `sql`'s answer as one scalar expression (a function call), when it is one. */
  readonly call: string | undefined;
  readonly order: number;
  readonly resolve: (applied: number) => void;
  readonly reject: (error: unknown) => void;
}

export class GroupCommit {
  private readonly waiting: Member[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** Figures for benchmarks: groups sent and statements in them; the
   * time groups spent waiting for a pooled connection and in all (from
   * leaving the queue to their answer), summed over groups — over a span,
   * `inFlightMs / span` is the mean number of groups on their way
   * (docs/decisions/0114); `sent`: the statements the server ran for
   * them, the folded calls counted once (docs/decisions/0130). */
  readonly figures = { groups: 0, statements: 0, sent: 0, connectingMs: 0, inFlightMs: 0 };

  constructor(
    private readonly pool: pg.Pool,
    private readonly groupsInFlight = groupsInFlightDefault,
    private readonly statementsMax = statementsMaxDefault,
  ) {}

  /** Resolves with the statement's `applied` column once its group
   * committed: 0 when it was refused (it wrote nothing), more when it
   * applied (1, or a preparation's 2: the agent's first, `functions.ts`);
   * rejects with the statement's error, with `ConnectionLost`, or with
   * `NotConnected` (nothing sent). `call`: the same write as one scalar
   * expression answering `applied` (then folded with its neighbours). */
  submit(sql: string, order = 0, call?: string): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.waiting.push({ sql, call, order, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.groupsInFlight || this.waiting.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.startGroups();
    });
  }

  private startGroups(): void {
    while (this.inFlight < this.groupsInFlight && this.waiting.length > 0) {
      const members = this.waiting.splice(0, this.statementsMax).sort((a, b) => a.order - b.order);
      this.inFlight += 1;
      // `send` settles every member; should it throw past that, its members fail.
      this.send(members)
        .catch((error: unknown) => {
          for (const member of members) member.reject(error);
        })
        .finally(() => {
          this.inFlight -= 1;
          this.startGroups();
        });
    }
  }

  /** `deliver`, its time counted in `figures`. */
  private async send(members: readonly Member[]): Promise<void> {
    const began = performance.now();
    try {
      await this.deliver(members, began);
    } finally {
      this.figures.inFlightMs += performance.now() - began;
    }
  }

  /** Sends the group on a pooled connection and settles every member;
   * `began`: when it left the queue (its wait for the connection counted). */
  private async deliver(members: readonly Member[], began: number, again = false): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
      this.figures.connectingMs += performance.now() - began;
    } catch (error) {
      const notConnected = new NotConnected(error);
      for (const member of members) member.reject(notConnected);
      return;
    }
    const backendPid = (client as unknown as { processID?: number }).processID;
    this.figures.groups += 1;
    this.figures.statements += members.length;
    const { text, answers, sent } = foldedGroup(members);
    this.figures.sent += sent;
    let results: pg.QueryResult[];
    try {
      const answer = await client.query(text);
      results = Array.isArray(answer) ? (answer as pg.QueryResult[]) : [answer];
    } catch (error) {
      if (isConnectionLoss(error)) {
        client.release(error instanceof Error ? error : new Error(String(error)));
        const lost = new ConnectionLost(error, backendPid);
        for (const member of members) member.reject(lost);
        return;
      }
      // The implicit transaction rolled back; the connection is idle again.
      client.release();
      if (members.length === 1) {
        // Chosen as a deadlock's victim: nothing was written, and the
        // transaction it waited for has ended — sent again, once.
        if (!again && isDeadlock(error)) return this.deliver(members, performance.now(), true);
        members[0]!.reject(error);
        return;
      }
      for (const member of members) await this.deliver([member], performance.now());
      return;
    }
    client.release();
    members.forEach((member, index) => {
      const where = answers[index]!;
      const applied = (results[where.statement]?.rows[0] as { applied?: unknown } | undefined)?.applied;
      member.resolve(Number((where.element === undefined ? applied : (applied as readonly unknown[] | undefined)?.[where.element]) ?? 0));
    });
  }
}

/** Where a member's answer is: its statement's `applied`, or an element of it. */
interface AnswerAt {
  readonly statement: number;
  readonly element: number | undefined;
}

/** The group's text (`GroupCommit`'s rule: each run of consecutive calls
 * one `SELECT ARRAY[…]`, every other member its own statement, in the
 * members' order) and where each member's answer is. */
export function foldedGroup(members: readonly { readonly sql: string; readonly call: string | undefined }[]): {
  readonly text: string;
  readonly answers: readonly AnswerAt[];
  readonly sent: number;
} {
  const statements: string[] = [];
  const answers: AnswerAt[] = [];
  /** The members of the run of calls not yet written. */
  let run: number[] = [];
  const endRun = () => {
    if (run.length === 0) return;
    const statement = statements.length;
    const calls = run.map((index) => members[index]!.call!);
    // A run of one call: the member's own statement, its answer a number.
    statements.push(run.length === 1 ? members[run[0]!]!.sql : `SELECT ARRAY[${calls.join(",\n")}]::integer[] AS applied`);
    run.forEach((index, element) => {
      answers[index] = { statement, element: run.length === 1 ? undefined : element };
    });
    run = [];
  };
  members.forEach((member, index) => {
    if (member.call !== undefined) {
      run.push(index);
      return;
    }
    endRun();
    answers[index] = { statement: statements.length, element: undefined };
    statements.push(member.sql);
  });
  endRun();
  return { text: statements.join(";\n"), answers, sent: statements.length };
}

/** PostgreSQL's `deadlock_detected` (40P01). */
function isDeadlock(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "40P01";
}
