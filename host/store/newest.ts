// A map kept as a bounded memory of the latest keys: setting a key makes it
// the newest, and past `max` entries the oldest is forgotten (a `Map`
// iterates in insertion order). For what a store remembers only to save a
// read or a computation: forgetting costs that read again, never an answer.

/** Sets `key` as the map's newest entry, forgetting the oldest past `max`. */
export function setNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
