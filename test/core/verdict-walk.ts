// The exhaustive walk of a two-argument verdict (an answer and fact bits):
// the compiled core against its reference model on every answer and every
// fact, one past each end included (out of range answers `None`).

import { expect } from "vitest";

/** Expects `compiled(answer, facts)` to be `model(answer, facts)` for every
 * answer in 0..answerEnd + 1 and every facts in 0..factsEnd + 1. */
export function expectEveryAnswerAndFact(
  compiled: (answer: number, facts: number) => number,
  model: (answer: number, facts: number) => number,
  answerEnd: number,
  factsEnd: number,
): void {
  for (let answer = 0; answer <= answerEnd + 1; answer += 1) {
    for (let facts = 0; facts <= factsEnd + 1; facts += 1) {
      expect(compiled(answer, facts), `answer ${answer} facts ${facts}`).toBe(model(answer, facts));
    }
  }
}
