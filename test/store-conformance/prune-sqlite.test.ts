// Pruning on the embedded SQLite store (a temporary file).

import { sqliteBackend } from "./backends.js";
import { definePruneSuite } from "./prune-suite.js";

definePruneSuite(sqliteBackend);
