// `npm run bench:peers`: the peers alone (bench/peers/run.ts), each's
// figures over BENCH_PEERS_ROUNDS rounds; `npm run bench` measures them in
// the same run as Phronomy and prints the ratios. Prints, asserts nothing.
//
//   npm run bench:peers
//   BENCH_PEERS=langgraph,dbos BENCH_PEERS_ROUNDS=3 npm run bench:peers

import { measurePeers } from "./run.js";
import { printPeersTable } from "./table.js";
import { CRASH_TOTAL, SECONDS, SUSPENDED } from "./workload.js";

const rounds = Number(process.env.BENCH_PEERS_ROUNDS ?? 1);
console.log(
  `npm run bench:peers — ${rounds} round(s) each, ${SECONDS} s loops, ${SUSPENDED} suspended, kill -9 → ${CRASH_TOTAL} done, node ${process.version}`,
);
printPeersTable(await measurePeers(rounds));
