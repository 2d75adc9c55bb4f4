// Which earlier answer a chat request replaces (host/chat/replaced-turn.ts,
// docs/decisions/0070): named by id where a message carries its execution,
// placed by position after the nearest one that does otherwise.

import { describe, expect, it } from "vitest";
import { isReplacing, replacedExecution, turnsOf } from "../../host/chat/replaced-turn.js";

const user = (id: string) => ({ id, role: "user" });
const assistant = (id: string) => ({ id, role: "assistant" });
const turns = ["e1", "e2", "e3"];

describe("replacedExecution", () => {
  it("only a regenerate or a submit naming a message replaces", () => {
    expect(isReplacing({ messages: [], trigger: "submit-message" })).toBe(false);
    expect(isReplacing({ messages: [] })).toBe(false);
    expect(isReplacing({ messages: [], trigger: "submit-message", messageId: "u" })).toBe(true);
    expect(isReplacing({ messages: [], trigger: "regenerate-message" })).toBe(true);
  });

  it("a regenerated answer by its id; a history user message by its `<id>:user`", () => {
    expect(replacedExecution({ messages: [user("x")], trigger: "regenerate-message", messageId: "e1" }, turns)).toBe("e1");
    expect(replacedExecution({ messages: [assistant("e1"), user("e2:user")], trigger: "submit-message", messageId: "e2:user" }, turns)).toBe("e2");
  });

  it("a history user message under the client's own id by the execution its metadata names (decision 0081)", () => {
    const loaded = (id: string, executionId: string) => ({ id, role: "user", metadata: { executionId, at: 1 } });
    expect(replacedExecution({ messages: [loaded("m1", "e1"), assistant("e1"), loaded("m2", "e2")], trigger: "submit-message", messageId: "m2" }, turns)).toBe(
      "e2",
    );
    // A page's own message after it is placed from it.
    expect(replacedExecution({ messages: [loaded("m2", "e2"), user("b")], trigger: "regenerate-message" }, turns)).toBe("e3");
  });

  it("a page's own user message by position: after the nearest message naming an execution, counting user messages without an answer", () => {
    const request = (messages: { id: string; role: string }[]) => ({ messages, trigger: "regenerate-message" });
    expect(replacedExecution(request([user("a")]), turns)).toBe("e1");
    expect(replacedExecution(request([user("a"), assistant("e1"), user("b")]), turns)).toBe("e2");
    // b's answer never arrived (the page shows none): c is the third turn.
    expect(replacedExecution(request([user("a"), assistant("e1"), user("b"), user("c")]), turns)).toBe("e3");
    expect(replacedExecution(request([user("e2:user"), user("c")]), turns)).toBe("e3");
    // Past the last turn: a message memory has no turn for yet, nothing replaced.
    expect(replacedExecution(request([assistant("e3"), user("d")]), turns)).toBeUndefined();
    // The metadata names the execution when the id does not.
    expect(replacedExecution(request([{ id: "z", role: "assistant", metadata: { executionId: "e2" } } as never, user("d")]), turns)).toBe("e3");
  });

  it("a history naming an answer memory no longer has cannot be placed: INVALID_INPUT naming it", () => {
    expect(() => replacedExecution({ messages: [assistant("gone"), user("x")], trigger: "regenerate-message" }, turns)).toThrow(
      expect.objectContaining({ code: "INVALID_INPUT", message: expect.stringContaining("gone") }),
    );
  });

  it("turnsOf: the executions of the history, oldest first, once each", () => {
    const history = ["e1", "e1", "e2", "e2", "e3"].map((executionId) => ({ metadata: { executionId, at: 1 } }));
    expect(turnsOf(history)).toEqual(["e1", "e2", "e3"]);
  });
});
