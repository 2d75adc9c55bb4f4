// The subset of the WebAssembly JavaScript API the host uses. Node 20's
// type definitions do not declare the `WebAssembly` namespace (only the DOM
// library does), and this package must not pull the DOM types into every
// consumer. Every runtime the package supports provides these at run time.

declare namespace WebAssembly {
  class Module {
    constructor(bytes: BufferSource);
  }
  class Instance {
    constructor(module: Module, imports?: Record<string, Record<string, unknown>>);
    readonly exports: Record<string, unknown>;
  }
  class Memory {
    readonly buffer: ArrayBuffer;
    grow(pages: number): number;
  }
  function compile(bytes: BufferSource): Promise<Module>;
}

type BufferSource = ArrayBufferView | ArrayBuffer;
