// The PostgreSQL store's tables, how a schema is recognised as a Phronomy
// store, and the forward migrations applied on open.
//
// Rules kept here:
// * Everything lives in one PostgreSQL schema of the store's own
//   (`phronomy` unless named). The table `store_version` marks it as
//   Phronomy's and holds the schema version (migrations applied).
// * Migrations run in one transaction under `pg_advisory_xact_lock`, keyed
//   on the schema name, so two processes opening a new database at once
//   migrate it once: the second waits for the lock, then reads the version
//   the first wrote and has nothing left to do. DDL is transactional in
//   PostgreSQL, so a crash mid-way leaves the old version intact.
// * A schema written by a newer Phronomy, or a schema holding tables of
//   another application, is refused with a `StoreError` and left untouched.
// * JSON columns hold `JSON.stringify` text, exactly as the SQLite store
//   does, so both backends read back the same values (jsonb would reorder
//   keys and drop duplicate ones).

import type pg from "pg";
import { StoreError } from "../../errors.js";
import {
  countStepsOnTheRow,
  createPrepareAtRevision,
  createPrepareReplacing,
  createPrepareReportingFirst,
  createPrepareReplacingDecided,
  createWriteFunctions,
  writeDocumentsInline,
  dropPrepareReplacing,
  fenceWritesByPartition,
  fenceWritesUnderLock,
  replacePrepareWithRoot,
} from "./functions.js";
import { createApprovalCommitFunction } from "./approval-commit.js";
import { createPartitions, lockPartitionFences, partitionCountDefault } from "./partitions.js";
import { addDecisionAction, addDecisionKind, addRetryKind, addStartKind, createApprovalInbox } from "./inbox.js";
import { createConversationQueues } from "./queue.js";
import { createSchedules } from "./schedules.js";
import { createExecutionPages } from "./pages.js";
import { createDueWaitIndex } from "./due-waits.js";
import { createDefinitionIndex } from "./page-definitions.js";
import { quotedIdentifier } from "./literals.js";
import { createPruneIndexes, indexRefusedStarts } from "./prune.js";
import { createConversationHomes } from "./homes.js";
import { fenceHomesOfMovedPartitions } from "./moved-out.js";
import { createConversationHasRows } from "./homes-rows.js";
import { indexColumnsBarriersKeep, roomForBarriers, roomForEveryBarrier } from "./hot-barriers.js";
import { indexInboxByAgent } from "./inbox-by-agent.js";
import { searchTriggersSkipWritten } from "./search-inline.js";
import { createEventSignals } from "./signals.js";
import { finishedAtPlain, writeFinishedAt } from "./finished-at.js";
import { statusAsDomain } from "./status-domain.js";

/** First key of the store's advisory locks: "PHRN" in ASCII. The second
 * key is `hashtext(schema)`, so stores in different schemas of one
 * database do not wait for each other. */
export const advisoryLockClass = 0x5048524e;

/** What a new schema is created with (the options of its first open). */
export interface SchemaSettings {
  /** Partitions of a new schema (migration 10, docs/decisions/0030). */
  readonly partitionCount: number;
}

/** What a migration is given: the settings, and the schema it runs in. */
interface MigrationContext extends SchemaSettings {
  readonly schema: string;
}

type Migration = (client: pg.ClientBase, context?: MigrationContext) => Promise<unknown>;

/** Version 1: agents (root), executions, their step timeline, the journal,
 * and the agent leases of multi-process ownership. */
async function createInitialTables(client: pg.ClientBase): Promise<void> {
  await client.query(`
    CREATE TABLE agents (
      agent_id   text PRIMARY KEY,
      lifecycle  text NOT NULL CHECK (lifecycle IN ('open', 'closed')),
      revision   bigint NOT NULL,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL
    );
    CREATE TABLE executions (
      execution_id     text PRIMARY KEY,
      agent_id         text NOT NULL,
      revision         bigint NOT NULL,
      status           text NOT NULL CHECK (status IN ('preparing', 'active', 'suspended', 'terminal')),
      phase            text NOT NULL,
      mode             text NOT NULL,
      input            text NOT NULL,
      metadata         text NOT NULL,
      outcome          text,
      output           text NOT NULL,
      error            text NOT NULL,
      usage            text NOT NULL,
      approval_request text NOT NULL,
      created_at       bigint NOT NULL,
      updated_at       bigint NOT NULL
    );
    CREATE INDEX executions_by_agent ON executions (agent_id, created_at);
    CREATE INDEX executions_by_status ON executions (status, created_at);
    CREATE INDEX executions_by_creation ON executions (created_at);
    -- write_id: the id of the operation that appended the step, set on the
    -- last step of each write; how an operation whose connection was lost
    -- finds out whether it committed (see store-postgres outcome resolution).
    CREATE TABLE steps (
      execution_id text NOT NULL,
      seq          bigint NOT NULL,
      kind         text NOT NULL,
      at           bigint NOT NULL,
      payload      text NOT NULL,
      write_id     text,
      PRIMARY KEY (execution_id, seq)
    );
    -- One sequence orders the journal: concurrent terminal commits of one
    -- agent's executions need no lock on a per-agent counter.
    CREATE TABLE journal (
      position     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      agent_id     text NOT NULL,
      execution_id text NOT NULL,
      role         text NOT NULL,
      content      text NOT NULL,
      at           bigint NOT NULL
    );
    CREATE INDEX journal_by_agent ON journal (agent_id, position);
    -- Ownership of an agent by one coordinator process (docs/decisions/0009).
    -- epoch grows on every takeover; writes carry the epoch they hold.
    CREATE TABLE leases (
      agent_id   text PRIMARY KEY,
      owner      text NOT NULL,
      epoch      bigint NOT NULL,
      expires_at timestamptz NOT NULL
    );
  `);
}

/** Migration i brings a schema from version i to version i + 1. Append only.
 * Version 2: the approval inbox (`inbox.ts`, docs/decisions/0011-approval-inbox.md).
 * Version 3: the functions of the hot operations (`functions.ts`, docs/decisions/0012).
 * Version 4: a preparation that carries its first provider barrier (docs/decisions/0014).
 * Version 5: the indexes pruning reads by (`prune.ts`, docs/decisions/0027).
 * Version 6: the conversation queues (`queue.ts`, docs/decisions/0025).
 * Version 7: the inbox's decision kind, for cancels by id (docs/decisions/0026).
 * Version 8: a preparation writes its agent's root when it has none (docs/decisions/0024).
 * Version 9: the inbox's `retry` kind, for retries filed by another process (docs/decisions/0026).
 * Version 10: ownership by partitions (`partitions.ts`, docs/decisions/0030).
 * Version 11: the inbox's `start` kind, for starts filed by any process (docs/decisions/0031).
 * Version 12: the partition fence lock (`partitions.ts`, docs/decisions/0042).
 * Version 13: the index pruning finds refused filed starts by (`prune.ts`, docs/decisions/0047).
 * Version 14: steps numbered from the execution row, the approval commit as one function (docs/decisions/0048).
 * Version 15: a preparation that replaces its conversation's memory from an earlier execution (docs/decisions/0070).
 * Version 16: a decision's answer beyond approve/decline, in the inbox (docs/decisions/0075).
 * Version 17: scheduled starts (`schedules.ts`, docs/decisions/0078).
 * Version 18: paging, search and counts (`pages.ts`, docs/decisions/0082).
 * Version 19: keyed signals, and the index of event waits by key (`signals.ts`, docs/decisions/0077).
 * Version 20: suspended rows indexed by their wait's due time (`due-waits.ts`, docs/decisions/0076).
 * Version 21: a replacing preparation decided by the core's verdicts (`functions.ts`, docs/decisions/0087).
 * Version 22: executions by definition (`page-definitions.ts`, docs/decisions/0089).
 * Version 23: migration 15's replacing preparation dropped, unused since 21 (`functions.ts`, docs/decisions/0096).
 * Version 24: conversation homes, a conversation moved to where its first start landed (`homes.ts`, docs/decisions/0101).
 * Version 25: the fence reads homes only in a partition a conversation was moved out of (`moved-out.ts`, docs/decisions/0107);
 *   the prune's and the pages' indexes on columns no barrier writes, so a barrier updates its row in place (`hot-barriers.ts`, 0108).
 * Version 26: one list of a conversation's rows for the move and the prune of homes, and the move reading its
 *   partition's flag under that partition's fence lock, so the prune may clear it (`homes-rows.ts`, docs/decisions/0116).
 * Version 27: the status a domain, not a table CHECK evaluated on every update (`status-domain.ts`), and `finished_at` a plain
 *   column written by the terminal commit, not a generated one (`finished-at.ts`): expressions no longer rebuilt for every
 *   statement that writes executions (docs/decisions/0117).
 * Version 28: a preparation says when it was its conversation's first (`functions.ts`, docs/decisions/0118).
 * Version 29: room on new pages for barriers to update in place (`hot-barriers.ts`), and the preparation and the
 *   terminal commit write the search document themselves, the row triggers skipped for them (`search-inline.ts`,
 *   docs/decisions/0120).
 * Version 30: every inbox row indexed by its conversation, so asking whether a conversation has rows is one probe, not a
 *   scan of the settled inbox (`inbox-by-agent.ts`, docs/decisions/0128).
 * Version 31: more room on new pages of executions (fillfactor 30), so nearly every barrier updates its row in place
 *   (`hot-barriers.ts`, docs/decisions/0143). */
export const migrations: readonly Migration[] = [
  createInitialTables,
  createApprovalInbox,
  createWriteFunctions,
  createPrepareAtRevision,
  createPruneIndexes,
  createConversationQueues,
  addDecisionKind,
  replacePrepareWithRoot,
  addRetryKind,
  partitionOwnership,
  addStartKind,
  partitionFenceLock,
  indexRefusedStarts,
  countedStepsAndApprovals,
  createPrepareReplacing,
  addDecisionAction,
  createSchedules,
  createExecutionPages,
  createEventSignals,
  createDueWaitIndex,
  createPrepareReplacingDecided,
  createDefinitionIndex,
  dropPrepareReplacing,
  conversationHomes,
  movedOutAndHotBarriers,
  conversationRows,
  statusAndFinishedAt,
  createPrepareReportingFirst,
  roomAndDocumentsInline,
  indexInboxByAgent,
  roomForEveryBarrier,
];

/** Migration 29 (docs/decisions/0120). Each part may run again on a schema
 * a test rewound (`test/postgres/fixtures/rewind.ts`). */
export async function roomAndDocumentsInline(client: pg.ClientBase): Promise<void> {
  await roomForBarriers(client);
  await writeDocumentsInline(client);
  await searchTriggersSkipWritten(client);
}

/** Migration 27 (docs/decisions/0117). */
export async function statusAndFinishedAt(client: pg.ClientBase): Promise<void> {
  await finishedAtPlain(client);
  await statusAsDomain(client);
  await writeFinishedAt(client);
}

async function conversationRows(client: pg.ClientBase, context?: MigrationContext): Promise<void> {
  if (context === undefined) throw new Error("migration 26 needs the schema name (the fence lock's key)");
  await createConversationHasRows(client, context.schema);
}

async function movedOutAndHotBarriers(client: pg.ClientBase, context?: MigrationContext): Promise<void> {
  if (context === undefined) throw new Error("migration 25 needs the schema name (the fence lock's key)");
  await fenceHomesOfMovedPartitions(client, context.schema);
  await indexColumnsBarriersKeep(client);
}

async function conversationHomes(client: pg.ClientBase, context?: MigrationContext): Promise<void> {
  if (context === undefined) throw new Error("migration 24 needs the schema name (the fence lock's key)");
  await createConversationHomes(client, context.schema);
}

async function partitionOwnership(client: pg.ClientBase, settings?: SchemaSettings): Promise<void> {
  await createPartitions(client, settings?.partitionCount ?? partitionCountDefault);
  await fenceWritesByPartition(client);
}

async function partitionFenceLock(client: pg.ClientBase, context?: MigrationContext): Promise<void> {
  if (context === undefined) throw new Error("migration 12 needs the schema name (the fence lock's key)");
  await lockPartitionFences(client, context.schema);
  await fenceWritesUnderLock(client);
}

async function countedStepsAndApprovals(client: pg.ClientBase): Promise<void> {
  await countStepsOnTheRow(client);
  await createApprovalCommitFunction(client);
}

export const schemaVersion = migrations.length;

/** Creates or migrates the store's schema; refuses a foreign or newer one. */
export async function migrate(client: pg.ClientBase, schema: string, where: string, settings: SchemaSettings): Promise<void> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [advisoryLockClass, schema]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quotedIdentifier(schema)}`);
    const version = await readVersion(client, schema, where);
    if (version > schemaVersion) {
      throw new StoreError(
        `${where} was written by a newer Phronomy (store schema version ${version}; this version reads up to ${schemaVersion}); it was left untouched: upgrade Phronomy to open it`,
        { details: { schemaVersion: version } },
      );
    }
    for (const migration of migrations.slice(version)) await migration(client, { ...settings, schema });
    if (version === 0) await client.query("CREATE TABLE store_version (application text NOT NULL, version integer NOT NULL)");
    await client.query("DELETE FROM store_version");
    await client.query("INSERT INTO store_version (application, version) VALUES ('phronomy', $1)", [schemaVersion]);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

/** The schema version, 0 for an empty (new) schema. */
async function readVersion(client: pg.ClientBase, schema: string, where: string): Promise<number> {
  const tables = await client.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name", [
    schema,
  ]);
  const names = tables.rows.map((row) => row.table_name);
  if (names.length === 0) return 0;
  if (!names.includes("store_version")) {
    throw new StoreError(
      `${where}: schema "${schema}" holds tables of another application (${names.slice(0, 5).join(", ")}), not a Phronomy store; it was left untouched: name another schema with ?schema=`,
    );
  }
  const row = (await client.query<{ application: string; version: number }>("SELECT application, version FROM store_version")).rows[0];
  if (row === undefined || row.application !== "phronomy") {
    throw new StoreError(`${where}: schema "${schema}" has a store_version table that is not Phronomy's; it was left untouched`);
  }
  return Number(row.version);
}
