// Finds and compiles core.wasm, once per build and process. A compiled
// `WebAssembly.Module` is immutable code: every environment still
// instantiates its own (its own memory, tables and state), so sharing the
// compilation keeps environments independent and saves each open after the
// first a file read and a compile (a test run or the whole-host simulation
// opens thousands). A failed read or compile is not kept: the next caller
// tries again, and finds a core built since.

import { readFile } from "node:fs/promises";

export type CoreBuild = "release" | "debug";

/** Where the compiled core lives relative to this module, in the source
 * tree (`host/core/` → `build/`) and in the built package (`dist/host/core/`
 * → `dist/build/`). */
export function coreWasmUrl(build: CoreBuild = "release"): URL {
  return new URL(`../../build/core.${build}.wasm`, import.meta.url);
}

/** The compilation of each build, started by the first caller. */
const compiled = new Map<CoreBuild, Promise<WebAssembly.Module>>();

export function loadCoreModule(build: CoreBuild = "release"): Promise<WebAssembly.Module> {
  let module = compiled.get(build);
  if (module === undefined) {
    module = compileCore(build);
    compiled.set(build, module);
    module.catch(() => compiled.delete(build));
  }
  return module;
}

async function compileCore(build: CoreBuild): Promise<WebAssembly.Module> {
  const url = coreWasmUrl(build);
  let bytes: Uint8Array;
  try {
    bytes = await readFile(url);
  } catch (error) {
    throw new Error(`phronomy: cannot read the control core at ${url.pathname}; run \`npm run build:core\` first`, { cause: error });
  }
  return WebAssembly.compile(bytes);
}
