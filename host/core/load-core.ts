// Finds and compiles core.wasm. Compiling is done once per caller that asks;
// nothing is cached at module level, so environments stay independent.

import { readFile } from "node:fs/promises";

export type CoreBuild = "release" | "debug";

/** Where the compiled core lives relative to this module, in the source
 * tree (`host/core/` → `build/`) and in the built package (`dist/host/core/`
 * → `dist/build/`). */
export function coreWasmUrl(build: CoreBuild = "release"): URL {
  return new URL(`../../build/core.${build}.wasm`, import.meta.url);
}

export async function loadCoreModule(build: CoreBuild = "release"): Promise<WebAssembly.Module> {
  const url = coreWasmUrl(build);
  let bytes: Uint8Array;
  try {
    bytes = await readFile(url);
  } catch (error) {
    throw new Error(`phronomy: cannot read the control core at ${url.pathname}; run \`npm run build:core\` first`, { cause: error });
  }
  return WebAssembly.compile(bytes);
}
