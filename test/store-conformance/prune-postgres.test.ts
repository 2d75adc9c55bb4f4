// Pruning on PostgreSQL (a fresh schema per test, dropped afterwards).

import { postgresBackend } from "./backends.js";
import { definePruneSuite } from "./prune-suite.js";

definePruneSuite(postgresBackend);
