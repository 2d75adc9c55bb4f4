// The store conformance suite on the embedded SQLite store (a temporary file).

import { sqliteBackend } from "./backends.js";
import { defineConformanceSuite } from "./suite.js";

defineConformanceSuite(sqliteBackend);
