// Positions in an execution's chat stream (docs/decisions/0036): every
// chunk of the UI message stream carries one, and a client that reconnects
// passes the last one it saw as `resumeAt` to get exactly what follows.
//
// A position names a place in the durable timeline, so it means the same
// thing in every process and after any restart:
//
//   "S"      after every chunk of step S (and of the steps before it);
//            "0" is the very beginning (no step has seq 0)
//   "S.k"    after chunk k of the chunks step S translates to
//   "S.tN"   inside the model call whose provider barrier is step S: its
//            text part is open and N characters of its streamed text were
//            sent (the text is not durable yet: decision 0036)
//
// Positions are ordered by S, then the durable chunks of S, then the
// streamed text of S.

import { InvalidInputError } from "../errors.js";

export type ChatPosition =
  | { readonly kind: "after_step"; readonly seq: number }
  | { readonly kind: "chunk"; readonly seq: number; readonly index: number }
  | { readonly kind: "text"; readonly seq: number; readonly characters: number };

/** The longest position string accepted: three integers and two marks. */
const positionLengthMax = 48;

const positionPattern = /^(\d{1,15})(?:\.(?:(\d{1,9})|t(\d{1,12})))?$/;

export const beginning: ChatPosition = { kind: "after_step", seq: 0 };

export function formatPosition(position: ChatPosition): string {
  switch (position.kind) {
    case "after_step":
      return String(position.seq);
    case "chunk":
      return `${position.seq}.${position.index}`;
    case "text":
      return `${position.seq}.t${position.characters}`;
  }
}

/** Parses a `resumeAt`; a malformed one is an InvalidInputError naming it. */
export function parsePosition(value: unknown, executionId: string): ChatPosition {
  const match = typeof value === "string" && value.length <= positionLengthMax ? positionPattern.exec(value) : null;
  if (match === null) {
    throw new InvalidInputError(
      `resumeAt ${JSON.stringify(value)} is not a position of a chat stream (expected "S", "S.k" or "S.tN", as the stream's chunks carry them); reconnect without resumeAt to replay the whole response`,
      { executionId, details: { resumeAt: String(value), reason: "malformed" } },
    );
  }
  const seq = Number(match[1]);
  if (match[2] !== undefined) return { kind: "chunk", seq, index: Number(match[2]) };
  if (match[3] !== undefined) return { kind: "text", seq, characters: Number(match[3]) };
  return { kind: "after_step", seq };
}

/** Negative when `a` comes before `b`, zero when they are the same place. */
export function comparePositions(a: ChatPosition, b: ChatPosition): number {
  if (a.seq !== b.seq) return a.seq - b.seq;
  return rank(a) - rank(b);
}

/** Within one step: its durable chunks, then its streamed text, then "after it". */
function rank(position: ChatPosition): number {
  switch (position.kind) {
    case "chunk":
      return position.index;
    case "text":
      return 2 ** 31 + position.characters;
    case "after_step":
      return Number.MAX_SAFE_INTEGER;
  }
}
