// The store conformance suite on the whole-host simulation's store
// (test/sim/cluster-store.ts): the contract SQLite and PostgreSQL keep.

import { simulatedBackend } from "./backends.js";
import { defineConformanceSuite } from "./suite.js";

defineConformanceSuite(simulatedBackend);
