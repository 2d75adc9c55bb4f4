// Calls a `pg` client method and notes when it was answered, whether the
// caller passed a callback or awaits the promise — the one trick both
// round-trip tallies of the PostgreSQL benches need (`postgres-profile.ts`,
// `postgres-restart-child.ts`). No imports: the restart child loads it
// before it times the modules it loads.

export type Method = (this: unknown, ...args: unknown[]) => unknown;

/** `original.apply(self, args)`, calling `note` once it was answered. */
export function callNotingAnswer(original: Method, self: unknown, args: unknown[], note: () => void): unknown {
  const callbackIndex = args.findIndex((arg) => typeof arg === "function");
  if (callbackIndex >= 0) {
    const callback = args[callbackIndex] as (...results: unknown[]) => void;
    args[callbackIndex] = (...results: unknown[]) => {
      note();
      callback(...results);
    };
    return original.apply(self, args);
  }
  const answer = original.apply(self, args);
  if (answer instanceof Promise) answer.then(note, note);
  return answer;
}
