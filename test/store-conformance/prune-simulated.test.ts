// Pruning on the whole-host simulation's store (test/sim/cluster-store.ts).

import { simulatedBackend } from "./backends.js";
import { definePruneSuite } from "./prune-suite.js";

definePruneSuite(simulatedBackend);
