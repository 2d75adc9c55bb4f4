// Layers without circles (issue 25, docs/decisions/0061-layers.md): every
// relative import between the files of host/ — `import type`, `export ...
// from` and `import("./x")` included — goes to a file of the same layer or
// a lower one, and no set of files imports itself round a circle. A type-
// only import counts: it couples the two files as much for a reader. A
// lower file that needs a few members of an upper one declares the
// interface it needs (`AgentHost` in runtime/agent.ts, `CoordinatorCalls`
// in runtime/coordinator-calls.ts), and the upper one satisfies it.

import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { circlePath, circlesOf, readImportGraph } from "./import-graph.js";

const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The layers, lowest first; a file belongs to the entry with the longest
 * path that is a prefix of its own. Why this order:
 * - shared: plain words (JSON, a stored error, token totals) and the
 *   public errors; everything names them, they name nothing above.
 * - core: the WebAssembly core's loader and typed views; no I/O of the host.
 * - store: the durable records and both backends; they know nothing of
 *   models, runs or environments.
 * - agent: models, tools, messages: what a model call is, not when it runs.
 * - runtime: the coordinator, the control loop, recovery, conversations
 *   and their handles, on the store and the core.
 * - chat: chat streams and responses, built on the runtime's runs and events.
 * - environment: `Environment` composes the runtime and serves the chat
 *   streams (its reads, `environment-reads.ts`), so it sits above chat.
 * - entries: the package entries (`phronomy`, `phronomy/testing`), and
 *   `defineAgent`, which the main entry exports for the CLI's agent modules.
 * - ui, cli: applications of the public entries (the dashboard; the command
 *   line, which serves the dashboard).
 */
const layers: readonly { readonly name: string; readonly paths: readonly string[] }[] = [
  { name: "shared", paths: ["host/words.ts", "host/errors.ts", "host/error-records.ts", "host/types/"] },
  { name: "core", paths: ["host/core/"] },
  { name: "store", paths: ["host/store/"] },
  { name: "agent", paths: ["host/agent/"] },
  { name: "runtime", paths: ["host/runtime/"] },
  { name: "chat", paths: ["host/chat/"] },
  { name: "environment", paths: ["host/runtime/environment.ts", "host/runtime/environment-reads.ts"] },
  { name: "entries", paths: ["host/index.ts", "host/testing.ts", "host/define-agent.ts"] },
  { name: "ui", paths: ["host/ui/"] },
  { name: "cli", paths: ["host/cli/"] },
];

/** The index in `layers` of the file's layer, or undefined when no entry names it. */
const layerOf = (file: string): number | undefined => {
  let best: { readonly layer: number; readonly length: number } | undefined;
  layers.forEach(({ paths }, layer) => {
    for (const path of paths) {
      const matches = path.endsWith("/") ? file.startsWith(path) : file === path;
      if (matches && (best === undefined || path.length > best.length)) best = { layer, length: path.length };
    }
  });
  return best?.layer;
};

const graph = readImportGraph(repositoryRoot, "host");

describe("the import graph of host/", () => {
  it("is read: every .ts file, with its relative imports", () => {
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get("host/index.ts")).toContain("host/runtime/environment.ts");
    // `import("./store/postgres/exists.js")`: a dynamic import is an edge.
    expect(graph.get("host/index.ts")).toContain("host/store/postgres/exists.ts");
  });

  it("has no circle", () => {
    const circles = circlesOf(graph).map((component) => circlePath(graph, component).join(" → "));
    expect(circles, `import circles (break each with a narrow interface in the lower file, or move shared words down):\n${circles.join("\n")}`).toEqual([]);
  });

  it("gives every file a layer", () => {
    const unplaced = [...graph.keys()].filter((file) => layerOf(file) === undefined);
    expect(unplaced, "files no entry of the layer table names: add their folder to `layers`").toEqual([]);
  });

  it("imports only from the same layer or a lower one", () => {
    const upward: string[] = [];
    for (const [file, imported] of graph) {
      const layer = layerOf(file)!;
      for (const target of imported) {
        const targetLayer = layerOf(target)!;
        if (targetLayer > layer) upward.push(`${file} (${layers[layer]!.name}) → ${target} (${layers[targetLayer]!.name})`);
      }
    }
    expect(upward, `upward imports:\n${upward.join("\n")}`).toEqual([]);
  });
});

describe("the circle finder", () => {
  it("finds a circle of three files and names it in order", () => {
    const circular = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a", "d"]],
      ["d", []],
    ]);
    expect(circlesOf(circular)).toEqual([["a", "b", "c"]]);
    expect(circlePath(circular, ["a", "b", "c"])).toEqual(["a", "b", "c", "a"]);
  });

  it("finds a file importing itself and nothing in a graph without circles", () => {
    expect(circlesOf(new Map([["a", ["a"]]]))).toEqual([["a"]]);
    expect(
      circlesOf(
        new Map([
          ["a", ["b"]],
          ["b", []],
        ]),
      ),
    ).toEqual([]);
  });
});
