// Tool definitions with Standard Schema inputs (zod 4 here): validation with
// paths, async refinements, the JSON Schema the model is shown, bad
// definitions named by key, approval predicates, handoffs and outputs.

import type { StandardSchemaV1 } from "@standard-schema/spec";
import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { jsonSchema, tool as aiTool } from "ai";
import { InvalidInputError, ToolFailedError } from "../../host/errors.js";
import {
  handoff,
  handoffInputJsonSchema,
  resolveTools,
  tool,
  toolNeedsApproval,
  toolOutputToJson,
  toolsPerAgentMax,
  validateToolInput,
  validateToolInputNow,
  type ResolvedFunctionTool,
  type ResolvedTool,
  type ToolSet,
} from "../../host/agent/tools.js";
import { formatIssuePath, isStandardSchema } from "../../host/agent/schema.js";

const lookupSchema = z.object({
  orderId: z.number().int().positive(),
  items: z.array(z.object({ sku: z.string(), quantity: z.number().default(1) })).optional(),
});

const lookup = tool({
  description: "Finds an order by id.",
  inputSchema: lookupSchema,
  execute: async (input) => ({ orderId: input.orderId, status: "shipped" }),
});

function functionTool(resolved: ResolvedTool | undefined): ResolvedFunctionTool {
  if (resolved?.kind !== "function") throw new Error("expected a function tool");
  return resolved;
}

function resolveOne(definition: unknown, name = "subject"): ResolvedTool {
  const [resolved] = resolveTools({ [name]: definition } as ToolSet);
  if (resolved === undefined) throw new Error("expected one tool");
  return resolved;
}

function invalidInputOf(action: () => unknown): InvalidInputError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  }
  throw new Error("expected an InvalidInputError");
}

describe("validateToolInput", () => {
  const resolved = functionTool(resolveOne(lookup, "lookup"));

  it("returns the schema's output for a valid input, defaults applied", async () => {
    const input = await validateToolInput(resolved, { orderId: 42, items: [{ sku: "A-1" }] });
    expect(input).toEqual({ orderId: 42, items: [{ sku: "A-1", quantity: 1 }] });
  });

  it("names the tool and every failing path", async () => {
    const failure = await validateToolInput(resolved, { orderId: -1, items: [{ sku: 5 }] }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(InvalidInputError);
    const error = failure as InvalidInputError;
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.message).toMatch(/^invalid input for tool "lookup": /);
    expect(error.message).toContain("orderId: ");
    expect(error.message).toContain("items[0].sku: ");
    expect(error.details?.toolName).toBe("lookup");
    expect(error.details?.paths).toEqual([["orderId"], ["items", 0, "sku"]]);
  });

  it("names the execution and call when the loop passes them", async () => {
    const failure = await validateToolInput(resolved, {}, { agentId: "support", executionId: "e7", callId: "call-0-0" }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ agentId: "support", executionId: "e7", details: { toolName: "lookup", callId: "call-0-0" } });
    expect((failure as Error).message).toMatch(/^execution e7: invalid input for tool "lookup": orderId: /);
  });

  it("reports a wrong root value at (input)", async () => {
    await expect(validateToolInput(resolved, "not an object")).rejects.toThrow(/\(input\): /);
    expect(formatIssuePath([])).toBe("(input)");
  });

  it("awaits asynchronous refinements", async () => {
    const reserved = new Set(["admin"]);
    const signup = functionTool(
      resolveOne(
        tool({
          inputSchema: z.object({ username: z.string() }).refine(
            async (value) => {
              await new Promise((resolve) => setTimeout(resolve, 1));
              return !reserved.has(value.username);
            },
            { message: "is taken", path: ["username"] },
          ),
          execute: () => "ok",
          jsonSchema: { type: "object", properties: { username: { type: "string" } } },
        }),
        "signup",
      ),
    );
    await expect(validateToolInput(signup, { username: "ada" })).resolves.toEqual({ username: "ada" });
    await expect(validateToolInput(signup, { username: "admin" })).rejects.toThrow('invalid input for tool "signup": username: is taken');
  });

  it("works with any Standard Schema, not only zod", async () => {
    const evenNumber: StandardSchemaV1<unknown, { n: number }> = {
      "~standard": {
        version: 1,
        vendor: "hand-written",
        validate: (value) => {
          const n = (value as { n?: unknown } | null)?.n;
          return typeof n === "number" && n % 2 === 0 ? { value: { n } } : { issues: [{ message: "must be even", path: [{ key: "n" }] }] };
        },
      },
    };
    const resolvedEven = functionTool(resolveOne(tool({ inputSchema: evenNumber, execute: ({ n }) => n / 2 }), "half"));
    expect(resolvedEven.inputJsonSchema).toEqual({ type: "object" });
    await expect(validateToolInput(resolvedEven, { n: 4 })).resolves.toEqual({ n: 4 });
    await expect(validateToolInput(resolvedEven, { n: 3 })).rejects.toThrow('tool "half": n: must be even');
  });

  it("answers without a promise when the schema validates at once, and as validateToolInput does either way (validateToolInputNow)", async () => {
    // A zod schema without async refinements: the value itself, defaults applied.
    const now = validateToolInputNow(resolved, { orderId: 42, items: [{ sku: "A-1" }] });
    expect(now).not.toBeInstanceOf(Promise);
    expect(now).toEqual({ orderId: 42, items: [{ sku: "A-1", quantity: 1 }] });
    // Invalid: the same InvalidInputError, thrown at once.
    let thrown: unknown;
    try {
      validateToolInputNow(resolved, { orderId: -1, items: [] }, { executionId: "e7", callId: "call-0-0" });
    } catch (error) {
      thrown = error;
    }
    const rejected = await validateToolInput(resolved, { orderId: -1, items: [] }, { executionId: "e7", callId: "call-0-0" }).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(InvalidInputError);
    expect((thrown as Error).message).toBe((rejected as Error).message);
    // A validator that answers with a promise: a promise, settled the same way.
    const later: StandardSchemaV1<unknown, { n: number }> = {
      "~standard": {
        version: 1,
        vendor: "hand-written",
        validate: async (value) => {
          const n = (value as { n?: unknown } | null)?.n;
          return typeof n === "number" ? { value: { n } } : { issues: [{ message: "must be a number", path: [{ key: "n" }] }] };
        },
      },
    };
    const resolvedLater = functionTool(resolveOne(tool({ inputSchema: later, execute: ({ n }) => n }), "later"));
    const pending = validateToolInputNow(resolvedLater, { n: 1 });
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).resolves.toEqual({ n: 1 });
    await expect(validateToolInputNow(resolvedLater, { n: "1" })).rejects.toThrow('invalid input for tool "later": n: must be a number');
    // An AI SDK schema: its `validate` at once, or none (every value passes).
    const aiSdkAtOnce = functionTool(
      resolveOne(
        aiTool({
          inputSchema: jsonSchema<{ n: number }>({ type: "object" }, { validate: (value) => ({ success: true, value: value as { n: number } }) }),
          execute: () => 0,
        }),
        "atOnce",
      ),
    );
    expect(validateToolInputNow(aiSdkAtOnce, { n: 2 })).toEqual({ n: 2 });
    const aiSdkNone = functionTool(resolveOne(aiTool({ inputSchema: jsonSchema<{ n: number }>({ type: "object" }), execute: () => 0 }), "none"));
    expect(validateToolInputNow(aiSdkNone, { n: 3 })).toEqual({ n: 3 });
  });

  it("keeps a throwing validator's error and adopts a thenable as await did (validateToolInputNow)", async () => {
    const schemaOf = (validate: (value: unknown) => unknown): StandardSchemaV1<unknown, { n: number }> =>
      ({ "~standard": { version: 1, vendor: "hand-written", validate } }) as StandardSchemaV1<unknown, { n: number }>;
    const broken = new Error("the refinement itself failed");
    const throwing = functionTool(
      resolveOne(
        tool({
          inputSchema: schemaOf(() => {
            throw broken;
          }),
          execute: ({ n }) => n,
        }),
        "throwing",
      ),
    );
    // At once: thrown as it is; through validateToolInput: a rejection, never a throw.
    expect(() => validateToolInputNow(throwing, { n: 1 })).toThrow(broken);
    const answer = validateToolInput(throwing, { n: 1 });
    expect(answer).toBeInstanceOf(Promise);
    await expect(answer).rejects.toBe(broken);
    // A thenable that is not a Promise: adopted, as `await` adopted it.
    const thenable = functionTool(
      resolveOne(
        tool({ inputSchema: schemaOf(() => ({ then: (resolve: (value: unknown) => void) => resolve({ value: { n: 4 } }) })), execute: ({ n }) => n }),
        "thenable",
      ),
    );
    const adopted = validateToolInputNow(thenable, { n: 4 });
    expect(adopted).toBeInstanceOf(Promise);
    await expect(adopted).resolves.toEqual({ n: 4 });
  });

  it("types execute's input from the schema", () => {
    tool({
      inputSchema: lookupSchema,
      execute: (input) => {
        expectTypeOf(input.orderId).toEqualTypeOf<number>();
        return null;
      },
    });
  });
});

describe("the JSON Schema a model is shown", () => {
  it("is converted from a zod schema's input side", () => {
    const resolved = resolveOne(lookup, "lookup");
    expect(resolved.inputJsonSchema).toMatchObject({
      type: "object",
      properties: { orderId: { type: "integer" }, items: { type: "array" } },
      required: ["orderId"],
    });
    expect(resolved.description).toBe("Finds an order by id.");
  });

  it("uses an explicit jsonSchema over the converter", () => {
    const explicit = { type: "object", properties: { orderId: { type: "number", description: "The order." } } };
    const resolved = resolveOne(tool({ inputSchema: lookupSchema, execute: () => null, jsonSchema: explicit }));
    expect(resolved.inputJsonSchema).toEqual(explicit);
  });

  it("falls back to zod's toJSONSchema method when the schema has no Standard JSON Schema", () => {
    const schema = z.object({ q: z.string() });
    const standard = schema["~standard"];
    const withoutStandardJsonSchema = Object.create(schema, {
      "~standard": { value: { version: standard.version, vendor: standard.vendor, validate: standard.validate } },
    }) as typeof schema;
    expect(isStandardSchema(withoutStandardJsonSchema)).toBe(true);
    const resolved = resolveOne(tool({ inputSchema: withoutStandardJsonSchema, execute: () => null }));
    expect(resolved.inputJsonSchema).toMatchObject({ type: "object", properties: { q: { type: "string" } }, required: ["q"] });
  });

  it("explains a schema JSON Schema cannot express and suggests the jsonSchema option", () => {
    const transformed = z.object({ when: z.string() }).transform((value) => new Date(value.when));
    const withCustom = z.object({ when: z.custom<Date>((value) => value instanceof Date) });
    const error = invalidInputOf(() => resolveOne(tool({ inputSchema: withCustom, execute: () => null }), "schedule"));
    expect(error.message).toMatch(/^tool "schedule": its inputSchema cannot be converted to JSON Schema .*pass the jsonSchema option$/);
    expect(error.details).toMatchObject({ toolName: "schedule", key: "inputSchema" });
    expect(resolveOne(tool({ inputSchema: transformed, execute: () => null })).inputJsonSchema).toMatchObject({ type: "object" });
  });

  it("refuses an input schema that is not an object", () => {
    const error = invalidInputOf(() => resolveOne(tool({ inputSchema: z.string(), execute: () => null }), "shout"));
    expect(error.message).toMatch(/^tool "shout": "inputSchema" describes "string" input/);
  });
});

describe("bad definitions", () => {
  it("names the key for a missing execute", () => {
    const error = invalidInputOf(() => resolveTools({ lookup: { kind: "function", inputSchema: lookupSchema } } as never));
    expect(error.message).toMatch(/^tool "lookup": "execute" must be a function/);
    expect(error.details).toEqual({ toolName: "lookup", key: "execute" });
    expect(() => tool({ inputSchema: lookupSchema } as never)).toThrow(/^tool\(\): "execute" must be a function/);
  });

  it("names the key for an input that is not a Standard Schema", () => {
    const error = invalidInputOf(() => resolveTools({ lookup: { inputSchema: { type: "object" }, execute: () => null } } as never));
    expect(error.message).toMatch(/^tool "lookup": "inputSchema" must be a Standard Schema/);
    expect(() => tool({ inputSchema: { parse: () => 1 }, execute: () => null } as never)).toThrow(InvalidInputError);
  });

  it("rejects tool names providers refuse", () => {
    for (const name of ["has space", "dotted.name", "9starts-with-digit", "", "x".repeat(65), "émoji"]) {
      const error = invalidInputOf(() => resolveTools({ [name]: lookup }));
      expect(error.message).toContain(`tool name "${name}" is not accepted by model providers`);
    }
    expect(resolveTools({ ["_ok-Name_9"]: lookup, ["x".repeat(64)]: lookup }).map((resolved) => resolved.name.length)).toEqual([10, 64]);
  });

  it("rejects unknown options, naming them", () => {
    expect(() => tool({ inputSchema: lookupSchema, execute: () => null, needsAproval: true } as never)).toThrow(/"needsAproval" is not an option/);
    expect(() => handoff({ to: "billing", reason: "x" } as never)).toThrow(/^handoff\(\): "reason" is not an option/);
  });

  it("rejects wrong option types", () => {
    expect(() => tool({ inputSchema: lookupSchema, execute: () => null, needsApproval: "yes" } as never)).toThrow(
      /"needsApproval" must be a boolean or a function/,
    );
    expect(() => tool({ inputSchema: lookupSchema, execute: () => null, description: 5 } as never)).toThrow(/"description" must be a string/);
    expect(() => tool({ inputSchema: lookupSchema, execute: () => null, jsonSchema: { when: new Date() } } as never)).toThrow(
      /"jsonSchema" must be a JSON Schema object/,
    );
    expect(() => resolveTools({ odd: { kind: "mcp" } } as never)).toThrow(/^tool "odd": "kind" must be "function" or "handoff"/);
    expect(() => resolveTools({ odd: 5 } as never)).toThrow(/^tool "odd" must be a tool\(\.\.\.\) or handoff\(\.\.\.\) definition/);
    expect(() => resolveTools([] as never)).toThrow(/tools must be an object/);
  });

  it("bounds the number of tools", () => {
    const tools = Object.fromEntries(Array.from({ length: toolsPerAgentMax + 1 }, (_, index) => [`t${index}`, lookup]));
    expect(() => resolveTools(tools)).toThrow(new RegExp(`at most ${toolsPerAgentMax} are allowed`));
    expect(resolveTools(undefined)).toEqual([]);
  });

  it("accepts a hand-written definition without kind and fills the defaults", () => {
    const resolved = functionTool(resolveOne({ inputSchema: lookupSchema, execute: () => null }));
    expect(resolved.definition.kind).toBe("function");
    expect(resolved.definition.needsApproval).toBe(false);
    expect(resolved.description).toBeUndefined();
  });
});

describe("toolNeedsApproval", () => {
  const refund = (needsApproval: unknown) =>
    functionTool(
      resolveOne(
        tool({
          inputSchema: z.object({ amount: z.number() }),
          execute: () => null,
          needsApproval: needsApproval as boolean,
        }),
        "refund",
      ),
    );

  it("defaults to no approval", async () => {
    expect(await toolNeedsApproval(functionTool(resolveOne(lookup)), { orderId: 1 })).toBe(false);
  });

  it("follows a boolean", async () => {
    expect(await toolNeedsApproval(refund(true), { amount: 1 })).toBe(true);
    expect(await toolNeedsApproval(refund(false), { amount: 1 })).toBe(false);
  });

  it("asks a predicate, synchronous or not, with the input", async () => {
    const overLimit = refund((input: { amount: number }) => input.amount > 100);
    expect(await toolNeedsApproval(overLimit, { amount: 500 })).toBe(true);
    expect(await toolNeedsApproval(overLimit, { amount: 5 })).toBe(false);
    const asynchronous = refund(async (input: { amount: number }) => input.amount > 100);
    expect(await toolNeedsApproval(asynchronous, { amount: 500 })).toBe(true);
  });

  it("refuses to guess when the predicate throws or answers a non-boolean", async () => {
    const throwing = refund(() => {
      throw new Error("policy service down");
    });
    const failure = await toolNeedsApproval(throwing, { amount: 1 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ToolFailedError);
    expect((failure as ToolFailedError).code).toBe("TOOL_FAILED");
    expect((failure as ToolFailedError).message).toMatch(/tool "refund": needsApproval threw \(policy service down\)/);
    await expect(
      toolNeedsApproval(
        refund(() => "yes"),
        { amount: 1 },
      ),
    ).rejects.toThrow(/needsApproval returned "yes"; it must return true or false/);
  });
});

describe("handoff", () => {
  it("is a framework tool without execute, shown to the model under its key", () => {
    const definition = handoff({ to: "billing" });
    expect(definition).toEqual({ kind: "handoff", to: "billing", description: undefined });
    expect(definition).not.toHaveProperty("execute");
    const [resolved] = resolveTools({ transfer_to_billing: definition, lookup });
    expect(resolved).toEqual({
      kind: "handoff",
      name: "transfer_to_billing",
      to: "billing",
      description: 'Hand the conversation over to agent "billing" when it is better placed to answer.',
      inputJsonSchema: handoffInputJsonSchema,
    });
  });

  it("keeps a given description and checks the target", () => {
    expect(resolveOne(handoff({ to: "billing", description: "Billing questions." })).description).toBe("Billing questions.");
    expect(() => handoff({ to: "" })).toThrow(/^handoff\(\): "to" must be the id of the agent/);
    expect(() => resolveTools({ transfer: { kind: "handoff" } } as never)).toThrow(/^tool "transfer": "to" must be the id/);
  });
});

describe("toolOutputToJson", () => {
  it("keeps JSON, records undefined as null and refuses the rest", () => {
    expect(toolOutputToJson("lookup", "c1", { status: "shipped", at: [1, 2] })).toEqual({ status: "shipped", at: [1, 2] });
    expect(toolOutputToJson("lookup", "c1", undefined)).toBeNull();
    expect(() => toolOutputToJson("lookup", "c1", new Map())).toThrow(ToolFailedError);
    const failure = (() => {
      try {
        return toolOutputToJson("lookup", "c1", { n: Number.NaN }, { agentId: "support", executionId: "e1" });
      } catch (error) {
        return error;
      }
    })();
    expect(failure).toBeInstanceOf(ToolFailedError);
    expect((failure as ToolFailedError).message).toMatch(/^execution e1: tool "lookup" \(call c1\) returned an object, which is not JSON-safe/);
    expect(failure).toMatchObject({ code: "TOOL_FAILED", agentId: "support", executionId: "e1", details: { toolName: "lookup", callId: "c1" } });
  });
});
