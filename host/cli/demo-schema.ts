// The demo agent's tool inputs as Standard Schemas written by hand, with
// their JSON Schema (Standard JSON Schema), so that the library's install
// needs no schema library for the CLI's demo (issue 17). Objects of
// required fields only: strings and positive integers are all the demo's
// tools take. An application brings its own library (zod, valibot,
// arktype).

import type { StandardJSONSchemaV1, StandardSchemaV1 } from "@standard-schema/spec";

type FieldKind = "string" | "positive integer";
type FieldValue<Kind extends FieldKind> = Kind extends "string" ? string : number;
type ObjectOf<Fields extends Record<string, FieldKind>> = { [Key in keyof Fields]: FieldValue<Fields[Key]> };

export type DemoSchema<Output> = StandardSchemaV1<Output> & StandardJSONSchemaV1<Output>;

export function objectSchema<const Fields extends Record<string, FieldKind>>(fields: Fields): DemoSchema<ObjectOf<Fields>> {
  const names = Object.keys(fields);
  const jsonSchema = {
    type: "object",
    properties: Object.fromEntries(names.map((name) => [name, fields[name] === "string" ? { type: "string" } : { type: "integer", exclusiveMinimum: 0 }])),
    required: names,
    additionalProperties: false,
  };
  const validate = (value: unknown): StandardSchemaV1.Result<ObjectOf<Fields>> => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return { issues: [{ message: "Expected an object" }] };
    const issues: StandardSchemaV1.Issue[] = [];
    for (const name of names) {
      const field = (value as Record<string, unknown>)[name];
      if (fields[name] === "string" && typeof field !== "string") issues.push({ message: "Expected a string", path: [name] });
      if (fields[name] === "positive integer" && !(typeof field === "number" && Number.isInteger(field) && field > 0))
        issues.push({ message: "Expected a positive integer", path: [name] });
    }
    for (const name of Object.keys(value)) if (!(name in fields)) issues.push({ message: "Unknown field", path: [name] });
    return issues.length > 0 ? { issues } : { value: value as ObjectOf<Fields> };
  };
  return {
    "~standard": {
      version: 1,
      vendor: "phronomy-demo",
      validate,
      jsonSchema: { input: () => jsonSchema, output: () => jsonSchema },
    },
  } as DemoSchema<ObjectOf<Fields>>;
}
