// The server-side functions of the hot store operations (docs/decisions/0012):
// prepare, barrier (provider and tool) and terminal commit, each one call.
// PL/pgSQL plans a function's statements once per connection and reuses
// them, so a call costs ≈ ⅓ of the same work sent as a fresh statement
// (measured: 85–95 µs against 230–260 µs per operation in groups of 40).
//
// Rules kept here:
// * A function never raises for a refusal: it writes nothing and returns 0
//   (compare-and-set matched no row, admission not allowed). It returns 1
//   when it applied. The caller reads why afterwards (`statements.ts`).
// * Everything the caller computed (metadata, step payloads) arrives as
//   JSON text and is stored as given, exactly as the SQLite store stores it.
// * The fence (owner, epoch) is checked in the same statement as the
//   write it guards; a NULL owner means "no leases" (docs/decisions/0010).
// * The last step appended carries the operation's write id (`outcome.ts`).
// * Functions are part of the schema version: a change is a new migration
//   that replaces them (`CREATE OR REPLACE`), never an edit of this one.

import type pg from "pg";
import { ReplaceFact, ReplaceVerdict } from "../../../assembly/abi.js";
import { fenceHeldSql, partitionHeldSql } from "./partitions.js";
import { insertedDocuments, terminalDocument } from "./search-inline.js";

export async function createWriteFunctions(client: pg.ClientBase): Promise<void> {
  await client.query(`
    -- Barriers rewrite no indexed column, so with room left in each page
    -- PostgreSQL updates the row in place (a HOT update) instead of adding
    -- an entry to every index of executions.
    ALTER TABLE executions SET (fillfactor = 70);
    CREATE FUNCTION append_steps(p_execution_id text, p_fresh boolean, p_kinds text[], p_ats bigint[], p_payloads text[], p_write_id text)
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      base bigint := 0;
      last bigint := cardinality(p_kinds);
    BEGIN
      IF last = 0 THEN RETURN; END IF;
      IF NOT p_fresh THEN
        SELECT coalesce(max(seq), 0) INTO base FROM steps WHERE execution_id = p_execution_id;
      END IF;
      INSERT INTO steps (execution_id, seq, kind, at, payload, write_id)
      SELECT p_execution_id, base + step.ordinal, step.kind, step.at, step.payload,
             CASE WHEN step.ordinal = last THEN p_write_id END
      FROM unnest(p_kinds, p_ats, p_payloads) WITH ORDINALITY AS step(kind, at, payload, ordinal);
    END $$;

    CREATE FUNCTION append_journal(p_agent_id text, p_execution_ids text[], p_roles text[], p_contents text[], p_ats bigint[])
    RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      IF cardinality(p_roles) = 0 THEN RETURN; END IF;
      INSERT INTO journal (agent_id, execution_id, role, content, at)
      SELECT p_agent_id, record.execution_id, record.role, record.content, record.at
      FROM unnest(p_execution_ids, p_roles, p_contents, p_ats) WITH ORDINALITY AS record(execution_id, role, content, at, ordinal)
      ORDER BY record.ordinal;
    END $$;

    ${prepareExecutionFunction("", "1")}
${barrierFunctions("agent")}
  `);
}

/** Migration 4: `prepare_execution` with the revision to store the execution
 * at, so a preparation can carry its first provider barrier (revision 2,
 * docs/decisions/0014). An overload: the version-3 function stays. */
export async function createPrepareAtRevision(client: pg.ClientBase): Promise<void> {
  await client.query(prepareExecutionFunction(", p_revision bigint", "p_revision"));
}

/** Migration 8 (schema version 8; written as migration 5 on its branch,
 * appended after retention's, the queues' and the decision kind's): both `prepare_execution` overloads write the agent's root
 * (open) when it has none, so defining an agent (a conversation) writes
 * nothing and its first preparation creates the root; a closed root still
 * refuses the start in the same statement (docs/decisions/0024-conversations.md). */
export async function replacePrepareWithRoot(client: pg.ClientBase): Promise<void> {
  await client.query(prepareExecutionFunction("", "1", true));
  await client.query(prepareExecutionFunction(", p_revision bigint", "p_revision", true));
}

/** A root's revision after its first preparation, the rule of the SQLite
 * store (`sqlite/operations.ts`): a root is written at revision 1 (an
 * enqueue, `ensureAgent`, a close, or the preparation's own insert just
 * before its admission), only an admission or a close raises it, by one,
 * and a closed root admits nothing; an undone admission (the id taken
 * concurrently) lowers it again. An open root at 2 right after its
 * admission was never prepared on before: no execution wrote to its
 * journal (docs/decisions/0067, 0118). */
const firstPreparedRootRevision = 2;

/** What `prepare_execution_reporting_first` returns when it applied as the
 * agent's first preparation (1 otherwise, 0 refused). */
export const preparedFirst = 2;

/** `prepare_execution`: admission (the agent root's revision bumped while it
 * is open, the id unused and the lease held unexpired) and the execution
 * inserted at `revision` — `1` (migration 3) or the `p_revision` argument
 * (migration 4's overload). The body is written once for both, and for
 * migration 28's `prepare_execution_reporting_first` (`reportsFirst`),
 * which returns 2, not 1, when the root's revision after its admission is
 * `firstPreparedRootRevision`: the agent's first preparation. */
function prepareExecutionFunction(
  extraParameters: string,
  revision: string,
  writesRoot = false,
  fencing: Fencing = "agent",
  numbering: Numbering = "max",
  reportsFirst = false,
  documents = false,
): string {
  const counted = numbering === "counted";
  const inline = documents ? insertedDocuments : undefined;
  const name = reportsFirst ? "prepare_execution_reporting_first" : "prepare_execution";
  return `
    CREATE ${writesRoot && (!reportsFirst || documents) ? "OR REPLACE " : ""}FUNCTION ${name}(
      p_execution_id text, p_agent_id text, p_status text, p_phase text, p_mode text, p_input text, p_metadata text,
      p_outcome text, p_error text, p_usage text, p_at bigint, p_fence_owner text, p_fence_epoch bigint,
      p_kinds text[], p_ats bigint[], p_payloads text[], p_write_id text,
      p_journal_ids text[], p_journal_roles text[], p_journal_contents text[], p_journal_ats bigint[]${extraParameters})
    RETURNS integer LANGUAGE plpgsql AS $$${
      reportsFirst
        ? `
    DECLARE
      root_revision bigint;`
        : ""
    }
    BEGIN${
      writesRoot
        ? `
      INSERT INTO agents (agent_id, lifecycle, revision, created_at, updated_at) VALUES (p_agent_id, 'open', 1, p_at, p_at)
      ON CONFLICT (agent_id) DO NOTHING;`
        : ""
    }
      UPDATE agents SET revision = revision + 1, updated_at = p_at
      WHERE agent_id = p_agent_id AND lifecycle = 'open'
        AND NOT EXISTS (SELECT 1 FROM executions WHERE execution_id = p_execution_id)
        AND (p_fence_owner IS NULL OR ${
          fencing === "agent"
            ? `EXISTS (
          SELECT 1 FROM leases WHERE agent_id = p_agent_id AND owner = p_fence_owner AND epoch = p_fence_epoch AND expires_at > clock_timestamp())`
            : fenceHeld(fencing, "p_agent_id", true)
        })${
          reportsFirst
            ? `
      RETURNING revision INTO root_revision`
            : ""
        };
      IF NOT FOUND THEN RETURN 0; END IF;
      INSERT INTO executions (execution_id, agent_id, revision, status, phase, mode, input, metadata, outcome, output,
                              error, usage, approval_request, created_at, updated_at${counted ? ", last_seq" : ""}${inline === undefined ? "" : `, ${inline.columns}`})
      VALUES (p_execution_id, p_agent_id, ${revision}, p_status, p_phase, p_mode, p_input, p_metadata, p_outcome, 'null',
              p_error, p_usage, 'null', p_at, p_at${counted ? ", cardinality(p_kinds)" : ""}${inline === undefined ? "" : `, ${inline.values}`})
      ON CONFLICT (execution_id) DO NOTHING;
      IF NOT FOUND THEN
        -- The id was taken concurrently (after the check above): undo the admission.
        UPDATE agents SET revision = revision - 1 WHERE agent_id = p_agent_id;
        RETURN 0;
      END IF;
      ${counted ? insertStepsSql("0") : "PERFORM append_steps(p_execution_id, true, p_kinds, p_ats, p_payloads, p_write_id);"}
      ${documents ? insertJournalSql("p_agent_id") : "PERFORM append_journal(p_agent_id, p_journal_ids, p_journal_roles, p_journal_contents, p_journal_ats);"}
      RETURN ${reportsFirst ? `CASE WHEN root_revision = ${firstPreparedRootRevision} THEN ${preparedFirst} ELSE 1 END` : "1"};
    END $$;
`;
}

/** How the write functions check a fence: the agent's lease (migrations
 * 3–8, docs/decisions/0010), its partition's read without a lock
 * (migration 10, 0030), or its partition's under the fence lock (migration
 * 12, 0042). */
export type Fencing = "agent" | "partition" | "partition-locked";

function fenceHeld(fencing: Fencing, agent: string, live: boolean): string {
  if (fencing === "partition") return partitionHeldSql(agent, "p_fence_owner", "p_fence_epoch", live);
  if (fencing === "partition-locked") return fenceHeldSql(agent, "p_fence_owner", "p_fence_epoch", live);
  return `EXISTS (
          SELECT 1 FROM leases WHERE leases.agent_id = ${agent} AND owner = p_fence_owner AND epoch = p_fence_epoch${live ? " AND expires_at > clock_timestamp()" : ""})`;
}

/** How a write numbers the steps it appends: after `max(seq)` of the
 * execution's steps (migrations 3–13), or after the execution row's
 * `last_seq`, set in the same UPDATE as the compare-and-set (migration 14,
 * docs/decisions/0048; `max(seq)` is read only for a row whose `last_seq`
 * is NULL: written before version 14, or by an operation of
 * `operations.ts`, which sets it NULL). */
export type Numbering = "max" | "counted";

/** The SET clause keeping `last_seq` with the compare-and-set that appends
 * `p_kinds`; `RETURNING last_seq INTO top` then gives the last seq. The
 * subquery is an InitPlan, run only when `last_seq` is NULL. */
export const countedStepsSql =
  "last_seq = coalesce(last_seq, (SELECT coalesce(max(seq), 0) FROM steps WHERE steps.execution_id = p_execution_id)) + cardinality(p_kinds)";

/** Inserts `p_kinds`/`p_ats`/`p_payloads` as steps numbered after `base`;
 * the last carries `p_write_id` (inline: a nested function call costs more
 * than the insert). */
export function insertStepsSql(base: string): string {
  return `INSERT INTO steps (execution_id, seq, kind, at, payload, write_id)
      SELECT p_execution_id, ${base} + step.ordinal, step.kind, step.at, step.payload,
             CASE WHEN step.ordinal = cardinality(p_kinds) THEN p_write_id END
      FROM unnest(p_kinds, p_ats, p_payloads) WITH ORDINALITY AS step(kind, at, payload, ordinal);`;
}

/** `append_journal`'s insert of the `p_journal_*` records for `agent`, inline
 * (migration 29, docs/decisions/0120): no nested PL/pgSQL call; no insert
 * started for a write without records (a suspension). */
function insertJournalSql(agent: string): string {
  return `IF cardinality(p_journal_roles) > 0 THEN
        INSERT INTO journal (agent_id, execution_id, role, content, at)
        SELECT ${agent}, record.execution_id, record.role, record.content, record.at
        FROM unnest(p_journal_ids, p_journal_roles, p_journal_contents, p_journal_ats) WITH ORDINALITY AS record(execution_id, role, content, at, ordinal)
        ORDER BY record.ordinal;
      END IF;`;
}

/** The barrier and terminal-commit functions, fenced by agent leases or by
 * partitions (then replacing the former); with `finishedAt`, the terminal
 * commit writes the row's `finished_at` (migration 27, `finished-at.ts`). */
function barrierFunctions(fencing: Fencing, numbering: Numbering = "max", finishedAt = false, searchInline = false): string {
  const replace = fencing === "agent" ? "" : "OR REPLACE ";
  const counted = numbering === "counted";
  const declareTop = counted
    ? `
    DECLARE
      top bigint;`
    : "";
  return `
    -- A provider or tool barrier: compare-and-set of an active execution.
    CREATE ${replace}FUNCTION barrier(
      p_execution_id text, p_expected bigint, p_phase text, p_metadata text, p_usage text, p_at bigint,
      p_fence_owner text, p_fence_epoch bigint, p_kinds text[], p_ats bigint[], p_payloads text[], p_write_id text)
    RETURNS integer LANGUAGE plpgsql AS $$${declareTop}
    BEGIN
      UPDATE executions SET revision = p_expected + 1, phase = p_phase, metadata = p_metadata, usage = p_usage, updated_at = p_at${
        counted
          ? `,
             ${countedStepsSql}`
          : ""
      }
      WHERE execution_id = p_execution_id AND revision = p_expected AND status = 'active'
        AND (p_fence_owner IS NULL OR ${fenceHeld(fencing, "executions.agent_id", false)})${
          counted
            ? `
      RETURNING last_seq INTO top`
            : ""
        };
      IF NOT FOUND THEN RETURN 0; END IF;
      ${counted ? insertStepsSql("top - cardinality(p_kinds)") : "PERFORM append_steps(p_execution_id, false, p_kinds, p_ats, p_payloads, p_write_id);"}
      RETURN 1;
    END $$;

    -- A terminal commit (suspended included): compare-and-set of a
    -- preparing, active or suspended execution.
    CREATE ${replace}FUNCTION terminal_commit(
      p_execution_id text, p_expected bigint, p_status text, p_outcome text, p_output text, p_error text, p_usage text,
      p_approval_request text, p_metadata text, p_at bigint, p_fence_owner text, p_fence_epoch bigint,
      p_kinds text[], p_ats bigint[], p_payloads text[], p_write_id text,
      p_journal_ids text[], p_journal_roles text[], p_journal_contents text[], p_journal_ats bigint[])
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      owner_agent text;${
        counted
          ? `
      top bigint;`
          : ""
      }
    BEGIN
      UPDATE executions SET revision = p_expected + 1, status = p_status, phase = p_status, outcome = p_outcome,
             output = p_output, error = p_error, usage = p_usage, approval_request = p_approval_request,
             metadata = p_metadata, updated_at = p_at${finishedAt ? ", finished_at = CASE WHEN p_status = 'terminal' THEN p_at END" : ""}${
               searchInline ? `, search = ${terminalDocument}` : ""
             }${
               counted
                 ? `,
             ${countedStepsSql}`
                 : ""
             }
      WHERE execution_id = p_execution_id AND revision = p_expected AND status IN ('preparing', 'active', 'suspended')
        AND (p_fence_owner IS NULL OR ${fenceHeld(fencing, "executions.agent_id", false)})
      RETURNING agent_id${counted ? ", last_seq" : ""} INTO owner_agent${counted ? ", top" : ""};
      IF NOT FOUND THEN RETURN 0; END IF;
      ${counted ? insertStepsSql("top - cardinality(p_kinds)") : "PERFORM append_steps(p_execution_id, false, p_kinds, p_ats, p_payloads, p_write_id);"}
      ${searchInline ? insertJournalSql("owner_agent") : "PERFORM append_journal(owner_agent, p_journal_ids, p_journal_roles, p_journal_contents, p_journal_ats);"}
      RETURN 1;
    END $$;
`;
}

/** Migration 10 (docs/decisions/0030-postgres-partitions.md): every write
 * function checks the fence against the agent's partition, not its lease. */
export async function fenceWritesByPartition(client: pg.ClientBase): Promise<void> {
  await client.query(barrierFunctions("partition"));
  await client.query(prepareExecutionFunction("", "1", true, "partition"));
  await client.query(prepareExecutionFunction(", p_revision bigint", "p_revision", true, "partition"));
}

/** Migration 12 (docs/decisions/0042): every write function checks the
 * fence under the partition's fence lock (`partitions.ts`,
 * `lockPartitionFences`), so no write of a fenced epoch commits after the
 * takeover that fenced it. */
export async function fenceWritesUnderLock(client: pg.ClientBase): Promise<void> {
  await client.query(barrierFunctions("partition-locked"));
  await client.query(prepareExecutionFunction("", "1", true, "partition-locked"));
  await client.query(prepareExecutionFunction(", p_revision bigint", "p_revision", true, "partition-locked"));
}

/** Migration 14 (docs/decisions/0048): steps numbered from the execution
 * row's `last_seq`, kept by the compare-and-set itself, instead of a
 * `max(seq)` read per write; the row's column is added NULL (unknown) for
 * the rows already written, which then read `max(seq)` once. */
export async function countStepsOnTheRow(client: pg.ClientBase): Promise<void> {
  await client.query("ALTER TABLE executions ADD COLUMN last_seq bigint");
  await client.query(barrierFunctions("partition-locked", "counted"));
  await client.query(prepareExecutionFunction("", "1", true, "partition-locked", "counted"));
  await client.query(prepareExecutionFunction(", p_revision bigint", "p_revision", true, "partition-locked", "counted"));
}

/** Migration 27 (docs/decisions/0117): the terminal commit writes
 * `finished_at`, a plain column from then on (`finished-at.ts`). */
export async function terminalCommitWritesFinishedAt(client: pg.ClientBase): Promise<void> {
  await client.query(barrierFunctions("partition-locked", "counted", true));
}

/** Migration 29 (docs/decisions/0120, `search-inline.ts`): the terminal
 * commit and the reporting preparation write the search document (and the
 * preparation the definition's name and `finished_at`) in their own
 * statement, so the row triggers that would compute them are not called;
 * and their journal records inline, not through `append_journal`. */
export async function writeDocumentsInline(client: pg.ClientBase): Promise<void> {
  await client.query(barrierFunctions("partition-locked", "counted", true, true));
  await client.query(prepareExecutionFunction(", p_revision bigint", "p_revision", true, "partition-locked", "counted", true, true));
}

/** Migration 28 (docs/decisions/0118): `prepare_execution_reporting_first`,
 * migration 14's revision-taking `prepare_execution` that returns 2 when it
 * applied as the agent's first preparation (1 otherwise, 0 refused), so the
 * store says `firstOfAgent` and the runtime reads no journal before the
 * first model call of a new conversation. A new function, not the old one
 * replaced: a process of the version before, running beside a migrated
 * schema, reads anything but 1 as a refusal, and both `prepare_execution`
 * overloads stay as they were for it. This version calls only the new one
 * (with the revision, 1 or 2). */
export async function createPrepareReportingFirst(client: pg.ClientBase): Promise<void> {
  await client.query(prepareExecutionFunction(", p_revision bigint", "p_revision", true, "partition-locked", "counted", true));
}

/** The parameters of a replacing preparation after its own (migrations 15
 * and 21): `prepare_execution`'s, at a revision. */
const replacingParameters = `p_execution_id text, p_agent_id text, p_status text, p_phase text, p_mode text, p_input text, p_metadata text,
      p_outcome text, p_error text, p_usage text, p_at bigint, p_fence_owner text, p_fence_epoch bigint,
      p_kinds text[], p_ats bigint[], p_payloads text[], p_write_id text,
      p_journal_ids text[], p_journal_roles text[], p_journal_contents text[], p_journal_ats bigint[], p_revision bigint`;

/** The end of a replacing preparation once it may replace (migrations 15
 * and 21): the preparation, and, when it applied, every journal record of
 * the agent from the cut on except the new input's. */
const prepareThenCut = `IF prepare_execution(p_execution_id, p_agent_id, p_status, p_phase, p_mode, p_input, p_metadata, p_outcome, p_error, p_usage, p_at,
                           p_fence_owner, p_fence_epoch, p_kinds, p_ats, p_payloads, p_write_id,
                           p_journal_ids, p_journal_roles, p_journal_contents, p_journal_ats, p_revision) = 0 THEN
        RETURN 0;
      END IF;
      DELETE FROM journal WHERE agent_id = p_agent_id AND position >= cut AND execution_id <> p_execution_id;
      RETURN 1;`;

/** Migration 15 (docs/decisions/0070): `prepare_execution_replacing`, a
 * preparation that replaces its conversation's memory from an earlier
 * execution (a start's `replaceFrom`): that execution's first journal
 * record is found, the execution must have ended, then the preparation
 * runs as `prepare_execution` does and, when it applied, every journal
 * record of the agent from that record on is deleted except the new
 * input's — all in the one statement, so memory is never cut without the
 * new execution, nor the reverse. It refuses (0, nothing written) as the
 * preparation does, and when the execution is not in the agent's memory
 * or has not ended; the caller reads why (`explainPrepareRefusal`). */
export async function createPrepareReplacing(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE FUNCTION prepare_execution_replacing(
      p_replace_from text,
      ${replacingParameters})
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      cut bigint;
    BEGIN
      SELECT min(position) INTO cut FROM journal WHERE agent_id = p_agent_id AND execution_id = p_replace_from;
      IF cut IS NULL THEN RETURN 0; END IF;
      IF EXISTS (SELECT 1 FROM executions WHERE execution_id = p_replace_from AND (status <> 'terminal' OR agent_id <> p_agent_id)) THEN
        RETURN 0;
      END IF;
      ${prepareThenCut}
    END $$;
  `);
}

/** Migration 21 (docs/decisions/0087): `prepare_execution_replacing_decided`,
 * migration 15's function with the core's verdicts: the preparation
 * carries `replaceVerdict` for every `ReplaceFact` bits (`p_verdicts`,
 * indexed by the bits, 1-based in SQL), and the function reads the facts
 * — the replaced execution's first journal position, its row's
 * conversation and status — and goes on only when the core's verdict on
 * them is `Replace`; the rest is migration 15's. Migration 15's function
 * stayed for a process of the version before, until migration 23. */
export async function createPrepareReplacingDecided(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE FUNCTION prepare_execution_replacing_decided(
      p_verdicts integer[], p_replace_from text,
      ${replacingParameters})
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      cut bigint;
      row_agent text;
      row_status text;
      facts integer := 0;
    BEGIN
      SELECT min(position) INTO cut FROM journal WHERE agent_id = p_agent_id AND execution_id = p_replace_from;
      SELECT agent_id, status INTO row_agent, row_status FROM executions WHERE execution_id = p_replace_from;
      IF FOUND THEN
        facts := facts | ${ReplaceFact.RowFound};
        IF row_agent = p_agent_id THEN facts := facts | ${ReplaceFact.SameConversation}; END IF;
        IF row_status = 'terminal' THEN facts := facts | ${ReplaceFact.Ended}; END IF;
      END IF;
      IF cut IS NOT NULL THEN facts := facts | ${ReplaceFact.InMemory}; END IF;
      IF p_verdicts[facts + 1] IS DISTINCT FROM ${ReplaceVerdict.Replace} OR cut IS NULL THEN RETURN 0; END IF;
      ${prepareThenCut}
    END $$;
  `);
}

/** Migration 23 (docs/decisions/0096): migration 15's
 * `prepare_execution_replacing` is dropped. Since migration 21 no code
 * calls it (the core's verdicts decide a replacing preparation, through
 * `prepare_execution_replacing_decided`); it was kept for a process of the
 * version before 21 still running beside one that migrated. `IF EXISTS`: a
 * schema rebuilt by hand may lack it. */
export async function dropPrepareReplacing(client: pg.ClientBase): Promise<void> {
  await client.query("DROP FUNCTION IF EXISTS prepare_execution_replacing");
}
