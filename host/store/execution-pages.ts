// Executions a page at a time, searched, and counted over the whole store
// (docs/decisions/0082): what the dashboard, the CLI and applications list
// by, on either backend.
//
// Rules kept here:
// * Paging is by keyset, never OFFSET: a cursor names the row a page ends
//   at (its `created_at` and id) and which way the next page goes, so a
//   deep page costs what the first one does, and rows written meanwhile
//   neither repeat nor vanish between pages.
// * The cursor is opaque text (base64url of a small JSON array) and is
//   checked like any input: a bad one is refused with InvalidInputError
//   naming the `cursor` field, never read as "the first page".
// * A text search is words, each matched as a prefix, all of them required,
//   over the first `searchIndexedCharsMax` characters of the input and the
//   output; both backends index the same text with the same word rules
//   (letters and digits; case folded). The query's words are parsed here,
//   once, so a store never puts a person's text into its search syntax.

import { InvalidInputError } from "../errors.js";
import { checkId } from "./check-id.js";
import { executionStatusNames, outcomeNames } from "./check-operation.js";
import type { ExecutionRow, ExecutionStatusName, OutcomeName } from "./records.js";

/** Rows one page holds at most: a page is for a person to read (inputs
 * and outputs included), and 200 rows is already a long screen. */
export const executionPageMax = 200;
/** Rows a page holds when no limit is given. */
export const executionPageDefault = 50;
/** Words a search takes at most: each is one index lookup, and a person
 * looking for something names a few. */
export const searchWordsMax = 8;
/** Characters of a search text at most. */
export const searchTextMax = 200;
/** Characters of an input, and of an output, the search index holds: the
 * opening of a long text is what a person searches for, and PostgreSQL
 * refuses a text-search document over 1 MB, which would fail the write. */
export const searchIndexedCharsMax = 32_768;

/** Which executions a page lists. Every filter narrows (they combine with AND). */
export interface ExecutionPageQuery {
  /** The durable status. */
  readonly status?: ExecutionStatusName;
  /** How it ended or paused. */
  readonly outcome?: OutcomeName;
  /** Only this agent's (conversation's). */
  readonly agentId?: string;
  /** Only conversations of the agent definition of this name (`env.agent({ name })`). */
  readonly definition?: string;
  /** Executions whose id starts with this. */
  readonly idPrefix?: string;
  /** Created at or after this time (ms since the epoch). */
  readonly since?: number;
  /** Created before this time (ms since the epoch). */
  readonly until?: number;
  /** Words each of which starts a word of the input or the output. */
  readonly text?: string;
  /** Where to go on from: a page's `next` or `previous`; absent: the newest. */
  readonly cursor?: string;
  /** Rows at most (default `executionPageDefault`, at most `executionPageMax`). */
  readonly limit?: number;
}

/** One page, newest first, and the cursors to its neighbours. */
export interface ExecutionPage {
  readonly rows: ExecutionRow[];
  /** Older rows follow: pass it as `cursor` for them. */
  readonly next?: string;
  /** Newer rows precede: pass it as `cursor` for them. */
  readonly previous?: string;
}

/** Executions per status and per outcome over the whole store. */
export interface ExecutionCounts {
  /** Durable statuses (`active`, `terminal`, …), outcomes (`completed`,
   * `failed`, …) and `queued` (messages waiting in their queue). */
  readonly byStatus: Readonly<Record<string, number>>;
  /** Executions in all (queued messages not included). */
  readonly total: number;
}

/** A store that pages, searches and counts (capability `pages`). */
export interface PagingStore {
  pageExecutions(query: ExecutionPageQuery): Promise<ExecutionPage>;
  countExecutions(filter?: { readonly agentId?: string }): Promise<ExecutionCounts>;
}

/** Which way a cursor goes: to older rows (`after` the row it names, in
 * newest-first order) or to newer ones (`before` it). */
export type PageDirection = "after" | "before";

/** A decoded cursor. */
export interface PageCursor {
  readonly direction: PageDirection;
  readonly createdAt: number;
  readonly executionId: string;
}

/** A query as a store runs it: checked, its cursor decoded, its words parsed. */
export interface CheckedPageQuery {
  readonly status?: ExecutionStatusName;
  readonly outcome?: OutcomeName;
  readonly agentId?: string;
  readonly definition?: string;
  readonly idPrefix?: string;
  readonly since?: number;
  readonly until?: number;
  /** Lower-cased words; empty: no search. */
  readonly words: readonly string[];
  readonly cursor?: PageCursor;
  readonly limit: number;
}

const queryKeys = ["status", "outcome", "agentId", "definition", "idPrefix", "since", "until", "text", "cursor", "limit"];
const cursorVersion = 1;

export function encodeCursor(cursor: PageCursor): string {
  return Buffer.from(JSON.stringify([cursorVersion, cursor.direction === "after" ? 0 : 1, cursor.createdAt, cursor.executionId])).toString("base64url");
}

export function decodeCursor(text: unknown, what: string): PageCursor {
  const refuse = (why: string): never => {
    throw new InvalidInputError(`${what}: "cursor" ${why}; pass a page's next or previous as it was given, or leave it out for the newest`, {
      details: { field: "cursor" },
    });
  };
  if (typeof text !== "string" || text.length === 0 || text.length > 1_000 || !/^[A-Za-z0-9_-]+$/.test(text)) return refuse("is not a cursor");
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    return refuse("is not a cursor");
  }
  if (!Array.isArray(parsed) || parsed.length !== 4 || parsed[0] !== cursorVersion) return refuse("is not a cursor of this version");
  const [, direction, createdAt, executionId] = parsed as [unknown, unknown, unknown, unknown];
  if ((direction !== 0 && direction !== 1) || !Number.isSafeInteger(createdAt) || typeof executionId !== "string" || executionId.length === 0)
    return refuse("is damaged");
  return { direction: direction === 0 ? "after" : "before", createdAt: createdAt as number, executionId };
}

/** The cursors of a page read with `query` that came back with `rows`
 * (newest first); `more`: the store had rows beyond them in the direction read. */
export function cursorsOf(query: CheckedPageQuery, rows: readonly ExecutionRow[], more: boolean): Pick<ExecutionPage, "next" | "previous"> {
  const first = rows[0];
  const last = rows[rows.length - 1];
  if (first === undefined || last === undefined) {
    // An empty page past either end: the way back is the cursor it was read with, turned round.
    if (query.cursor === undefined) return {};
    const back = { ...query.cursor, direction: query.cursor.direction === "after" ? "before" : "after" } as PageCursor;
    return query.cursor.direction === "after" ? { previous: encodeCursor(back) } : { next: encodeCursor(back) };
  }
  const olderExist = query.cursor?.direction === "before" || more;
  const newerExist = query.cursor?.direction === "after" || (query.cursor?.direction === "before" && more);
  return {
    ...(olderExist ? { next: encodeCursor({ direction: "after", createdAt: last.createdAt, executionId: last.executionId }) } : {}),
    ...(newerExist ? { previous: encodeCursor({ direction: "before", createdAt: first.createdAt, executionId: first.executionId }) } : {}),
  };
}

/** Words of a search text: runs of letters and digits, lower-cased. */
export function searchWords(text: string): string[] {
  return [...new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
}

/** Checks a page query (InvalidInputError naming the field) and prepares it. */
export function checkPageQuery(query: unknown, what: string): CheckedPageQuery {
  if (typeof query !== "object" || query === null || Array.isArray(query))
    throw new InvalidInputError(`${what}: the query must be an object { ${queryKeys.join(", ")} }`, { details: { field: "query" } });
  for (const key of Object.keys(query)) {
    if (!queryKeys.includes(key)) refuse(what, key, `is not a filter; known ones: ${queryKeys.join(", ")}`);
  }
  const given = query as Record<string, unknown>;
  const { status, outcome, agentId, definition, idPrefix, since, until, text, cursor, limit } = given;
  if (status !== undefined && !executionStatusNames.includes(status as ExecutionStatusName))
    refuse(what, "status", `must be one of ${executionStatusNames.join(", ")}, got ${JSON.stringify(status)}`);
  if (outcome !== undefined && !outcomeNames.includes(outcome as OutcomeName))
    refuse(what, "outcome", `must be one of ${outcomeNames.join(", ")}, got ${JSON.stringify(outcome)}`);
  if (agentId !== undefined) checkId(agentId, `${what}: agentId`);
  if (definition !== undefined && (typeof definition !== "string" || definition.length === 0 || definition.length > 200))
    refuse(what, "definition", "must be a definition's name: a non-empty string of at most 200 characters");
  if (idPrefix !== undefined && (typeof idPrefix !== "string" || idPrefix.length === 0 || idPrefix.length > 200))
    refuse(what, "idPrefix", "must be a non-empty string of at most 200 characters");
  for (const [key, value] of [
    ["since", since],
    ["until", until],
  ] as const) {
    if (value !== undefined && !Number.isSafeInteger(value)) refuse(what, key, `must be a time in ms since the epoch, got ${JSON.stringify(value)}`);
  }
  if (text !== undefined && (typeof text !== "string" || text.length > searchTextMax))
    refuse(what, "text", `must be a string of at most ${searchTextMax} characters`);
  const words = typeof text === "string" ? searchWords(text) : [];
  if (words.length > searchWordsMax) refuse(what, "text", `has ${words.length} words; a search takes at most ${searchWordsMax}`);
  if (limit !== undefined && (!Number.isSafeInteger(limit) || (limit as number) < 1 || (limit as number) > executionPageMax))
    refuse(what, "limit", `must be an integer from 1 to ${executionPageMax}, got ${JSON.stringify(limit)}`);
  return {
    ...(status !== undefined ? { status: status as ExecutionStatusName } : {}),
    ...(outcome !== undefined ? { outcome: outcome as OutcomeName } : {}),
    ...(agentId !== undefined ? { agentId: agentId as string } : {}),
    ...(definition !== undefined ? { definition: definition as string } : {}),
    ...(idPrefix !== undefined ? { idPrefix: idPrefix as string } : {}),
    ...(since !== undefined ? { since: since as number } : {}),
    ...(until !== undefined ? { until: until as number } : {}),
    ...(cursor !== undefined ? { cursor: decodeCursor(cursor, what) } : {}),
    words,
    limit: (limit as number | undefined) ?? executionPageDefault,
  };
}

/** The counts filter, checked. */
export function checkCountsFilter(filter: unknown, what: string): { readonly agentId?: string } {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter))
    throw new InvalidInputError(`${what}: the filter must be an object { agentId }`, { details: { field: "filter" } });
  for (const key of Object.keys(filter)) if (key !== "agentId") refuse(what, key, "is not a filter; the known one is agentId");
  const { agentId } = filter as { agentId?: unknown };
  if (agentId !== undefined) checkId(agentId, `${what}: agentId`);
  return agentId === undefined ? {} : { agentId: agentId as string };
}

/** Counts as a store's GROUP BY rows give them. */
export function countsOf(statusRows: Iterable<[string, number]>, outcomeRows: Iterable<[string, number]>, queued: number): ExecutionCounts {
  const byStatus: Record<string, number> = {};
  let total = 0;
  for (const [status, count] of statusRows) {
    byStatus[status] = count;
    total += count;
  }
  // `suspended` is both a status and an outcome: the status counts it.
  for (const [outcome, count] of outcomeRows) if (outcome !== "suspended") byStatus[outcome] = count;
  byStatus["queued"] = queued;
  return { byStatus, total };
}

function refuse(what: string, field: string, why: string): never {
  throw new InvalidInputError(`${what}: "${field}" ${why}`, { details: { field } });
}
