// A wait's response schema is converted to JSON Schema once per schema
// (decision 0085), not at every suspension: `jsonSchemaOnce` gives the
// converter's answer, one frozen object per schema, and asks a converter
// that threw again; two event waits on one tool carry the same object.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { convertToJsonSchema, jsonSchemaOnce } from "../../host/agent/schema.js";
import { waitForEvent, type ApprovalRequest } from "../../host/index.js";
import { openEnvironment, scriptedModel } from "../runtime/helpers.js";

describe("jsonSchemaOnce", () => {
  it("answers what the converter answers, one frozen object per schema", () => {
    const schema = z.object({ paid: z.boolean(), note: z.object({ text: z.string() }).optional() });
    const first = jsonSchemaOnce(schema);
    expect(first).toEqual(convertToJsonSchema(schema));
    expect(jsonSchemaOnce(schema)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen((first?.["properties"] as Record<string, unknown>)["paid"])).toBe(true);
    expect(jsonSchemaOnce(z.object({ paid: z.boolean() }))).not.toBe(first);
  });

  it("keeps no answer for a schema without a converter, and asks a converter that threw again", () => {
    const bare = { "~standard": { version: 1 as const, vendor: "bare", validate: (value: unknown) => ({ value }) } };
    expect(jsonSchemaOnce(bare)).toBeUndefined();
    expect(jsonSchemaOnce(bare)).toBeUndefined();
    let asked = 0;
    const throwing = {
      "~standard": {
        version: 1 as const,
        vendor: "throwing",
        validate: (value: unknown) => ({ value }),
        jsonSchema: {
          input: () => {
            asked += 1;
            throw new Error("no JSON Schema for a transform");
          },
          output: () => ({}),
        },
      },
    };
    expect(() => jsonSchemaOnce(throwing)).toThrow("no JSON Schema for a transform");
    expect(() => jsonSchemaOnce(throwing)).toThrow("no JSON Schema for a transform");
    expect(asked).toBe(2);
  });

  it("gives two event waits on one tool the same response schema", async () => {
    const env = await openEnvironment();
    const awaitPayment = waitForEvent({
      inputSchema: z.object({ orderId: z.string() }),
      key: ({ orderId }) => `payment:${orderId}`,
      payloadSchema: z.object({ paid: z.boolean() }),
    });
    const model = scriptedModel(({ messages }) => {
      const last = messages.at(-1);
      return last?.role === "user" ? { toolCalls: [{ toolName: "awaitPayment", input: { orderId: last.content } }] } : { text: "paid" };
    });
    const payers = env.agent({ name: "payers", model, tools: { awaitPayment } });
    const suspended = (id: string) =>
      new Promise<ApprovalRequest>((resolve) => {
        payers.conversation(id).start(id, {
          onEvent: (event) => {
            if (event.type === "approval_required") resolve(event.request);
          },
        });
      });
    const [first, second] = [await suspended("a"), await suspended("b")];
    expect(first.responseSchema).toEqual(convertToJsonSchema(z.object({ paid: z.boolean() })));
    expect(second.responseSchema).toBe(first.responseSchema);
    await env.close();
  });
});
