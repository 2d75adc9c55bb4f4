// The two backends the conformance suite runs against, behind one small
// interface: open a new empty store, reopen one after close, and two raw
// hooks that bypass the store (tamper with a row, count rows) written once
// per backend's SQL dialect.

import { join } from "node:path";
import { SqliteStore } from "../../host/store/sqlite-store.js";
import { PostgresStore } from "../../host/store/postgres-store.js";
import type { ExecutionStore } from "../../host/store/store.js";
import { rawExec, rawValue, temporaryDirectory, track } from "../store/fixtures.js";
import { atEnd, freshSchema, postgresUrl, withClient } from "../postgres/database.js";
import { Cluster } from "../sim/cluster-store.js";

export interface Backend {
  readonly name: string;
  /** A new, empty store, closed after the test. */
  open(): Promise<ExecutionStore>;
  /** Another store on the same data (after `store.close()`). */
  reopen(store: ExecutionStore): Promise<ExecutionStore>;
  /** Corrupts the usage column of one execution behind the store's back (the metadata cannot be: an index reads it, decision 0089, and the database refuses malformed JSON there). */
  corruptUsage(store: ExecutionStore, executionId: string): Promise<void>;
  /** Marks a stored approval request as decided behind the store's back. */
  markDecided(store: ExecutionStore, executionId: string): Promise<void>;
  /** Whether its preparations say `firstOfAgent` (optional in the store
   * contract: a store that leaves it out costs the runtime a journal read). */
  readonly reportsFirstOfAgent: boolean;
  /** Rows of `table` (steps, journal, executions) for an id, read raw. */
  countRows(store: ExecutionStore, table: "steps" | "executions" | "approval_inbox" | "journal", executionId: string): Promise<number>;
}

export const sqliteBackend: Backend = {
  name: "sqlite",
  reportsFirstOfAgent: true,
  async open() {
    return track(await SqliteStore.open(join(await temporaryDirectory(), "agents.db")));
  },
  async reopen(store) {
    return track(await SqliteStore.open(store.path));
  },
  async corruptUsage(store, executionId) {
    rawExec(store.path, `UPDATE executions SET usage = '{not json' WHERE execution_id = '${executionId}'`);
  },
  async markDecided(store, executionId) {
    rawExec(
      store.path,
      `UPDATE executions SET approval_request = json_set(approval_request, '$.decision', json('{"approved":false,"reason":null,"decidedAt":1}')) WHERE execution_id = '${executionId}'`,
    );
  },
  async countRows(store, table, executionId) {
    return Number(rawValue(store.path, countRowsSql(table), executionId));
  },
};

const schemaOf = new WeakMap<ExecutionStore, string>();

async function openPostgres(schema: string): Promise<ExecutionStore> {
  const store = await PostgresStore.open(postgresUrl, { schema });
  schemaOf.set(store, schema);
  atEnd(() => store.close());
  return store;
}

function rawPostgres(store: ExecutionStore, sql: string, values: unknown[] = []): Promise<unknown[]> {
  const schema = schemaOf.get(store);
  if (schema === undefined) throw new Error("not a PostgreSQL store of this suite");
  return withClient(async (client) => {
    await client.query(`SET search_path = ${schema}`);
    return (await client.query(sql, values)).rows as unknown[];
  });
}

export const postgresBackend: Backend = {
  name: "postgres",
  // Since migration 28 (docs/decisions/0118).
  reportsFirstOfAgent: true,
  open: () => openPostgres(freshSchema()),
  reopen: (store) => openPostgres(schemaOf.get(store) ?? "missing"),
  async corruptUsage(store, executionId) {
    await rawPostgres(store, "UPDATE executions SET usage = '{not json' WHERE execution_id = $1", [executionId]);
  },
  async markDecided(store, executionId) {
    await rawPostgres(
      store,
      `UPDATE executions SET approval_request = (approval_request::jsonb || '{"decision":{"approved":false,"reason":null,"decidedAt":1}}'::jsonb)::text WHERE execution_id = $1`,
      [executionId],
    );
  },
  async countRows(store, table, executionId) {
    const rows = await rawPostgres(store, `SELECT count(*)::int AS n FROM ${table} WHERE execution_id = $1`, [executionId]);
    return Number((rows[0] as { n: number }).n);
  },
};

// The whole-host simulation's store (test/sim/cluster-store.ts): one
// in-memory database shared by every handle of a cluster; each write
// commits in a microtask.
const clusterOf = new WeakMap<ExecutionStore, Cluster>();

function openCluster(cluster: Cluster, owner: string): ExecutionStore {
  const store = cluster.storeFor(owner);
  clusterOf.set(store, cluster);
  atEnd(() => store.close());
  return store;
}

function clusterConnection(store: ExecutionStore): Cluster {
  const cluster = clusterOf.get(store);
  if (cluster === undefined) throw new Error("not a simulated store of this suite");
  return cluster;
}

/** How a SQLite file's rows of an execution are counted. The timeline is
 * keyed by the execution's rowid (docs/decisions/0094): once the execution
 * is deleted its steps cannot be named by its id, so steps that belong to
 * no execution count too (there must never be any). */
function countRowsSql(table: string): string {
  if (table !== "steps") return `SELECT count(*) FROM ${table} WHERE execution_id = ?`;
  return `SELECT count(*) FROM steps WHERE execution_rowid = (SELECT rowid FROM executions WHERE execution_id = ?)
            OR execution_rowid NOT IN (SELECT rowid FROM executions)`;
}

export const simulatedBackend: Backend = {
  name: "simulated",
  reportsFirstOfAgent: true,
  async open() {
    return openCluster(new Cluster(600_000, true), "process-1");
  },
  async reopen(store) {
    return openCluster(clusterConnection(store), "process-2");
  },
  async corruptUsage(store, executionId) {
    clusterConnection(store).connection.prepare("UPDATE executions SET usage = '{not json' WHERE execution_id = ?").run(executionId);
  },
  async markDecided(store, executionId) {
    clusterConnection(store)
      .connection.prepare(
        `UPDATE executions SET approval_request = json_set(approval_request, '$.decision', json('{"approved":false,"reason":null,"decidedAt":1}')) WHERE execution_id = ?`,
      )
      .run(executionId);
  },
  async countRows(store, table, executionId) {
    return Number(Object.values(clusterConnection(store).connection.prepare(countRowsSql(table)).get(executionId) ?? {})[0]);
  },
};
