// `Promise.withResolvers` (ES2024, Node ≥ 22) where the runtime lacks it:
// Restate's SDK calls it on every invocation, and the bench runs on the
// machine's Node (20 on the development machines; the package's own floor
// is 22.13, unenforced by scripts/bench-compiled.mjs). Imported first by
// bench/peers/restate.ts; the standard's behaviour, nothing more.

interface Resolvers<T> {
  promise: Promise<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (reason?: unknown) => void;
}

const promiseConstructor = Promise as unknown as { withResolvers?: <T>() => Resolvers<T> };
if (typeof promiseConstructor.withResolvers !== "function") {
  promiseConstructor.withResolvers = <T>(): Resolvers<T> => {
    let resolve!: Resolvers<T>["resolve"];
    let reject!: Resolvers<T>["reject"];
    const promise = new Promise<T>((yes, no) => {
      resolve = yes;
      reject = no;
    });
    return { promise, resolve, reject };
  };
}
