// The options of a PostgreSQL store, in a file of their own that imports
// nothing: the package's public types name them, and must compile for an
// application without \`pg\` or its types installed (issue 17).

/** What `PostgresStore.open` (and `Phronomy.open({ postgres })`) takes. */
export interface PostgresStoreOptions {
  /** The PostgreSQL schema of the store's tables (default `phronomy`, or
   * `?schema=` in the URL). */
  readonly schema?: string;
  /** Connections at most (default `poolSizeDefault`, at most `poolSizeMax`). */
  readonly poolSize?: number;
  /** How long an agent lease lasts without renewal, in milliseconds
   * (default `leaseMsDefault`, 5 s, or `?lease_ms=` in the URL); renewals
   * run every third of it (docs/decisions/0010). */
  readonly leaseMs?: number;
  /** This process's name in the partition leases (docs/decisions/0030):
   * a process opening with the id of a dead one takes its partitions at
   * once. Default: the host name (`host:pid` when a live process on this
   * host holds it). Give each live process its own. */
  readonly instanceId?: string;
  /** Partitions of a NEW schema (default 256); an existing schema keeps the
   * count it was created with. */
  readonly partitions?: number;
  /** false: take no share of the partitions (a short-lived process: the
   * CLI); only those of the agents it uses, when free (default true). */
  readonly balance?: boolean;
  /** true: a start that lands here for a conversation held by another
   * process, and that has nothing anywhere yet (no row of any kind), moves
   * the conversation into a partition held here and runs here, instead of
   * filing it for the holder (docs/decisions/0101). Default false. */
  readonly takeIdleHere?: boolean;
}

/** What an application holds of an opened PostgreSQL store: an
 * \`ExecutionStore\` to pass to \`Phronomy.open({ store })\`, with its
 * location. (The class behind it is internal: its members name \`pg\`'s
 * types.) */
export interface PostgresStoreHandle {
  /** The URL without its password, with the schema. */
  readonly path: string;
  /** The PostgreSQL schema of its tables. */
  readonly schema: string;
}
