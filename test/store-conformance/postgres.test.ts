// The store conformance suite on PostgreSQL (a fresh schema per test, dropped afterwards).

import { postgresBackend } from "./backends.js";
import { defineConformanceSuite } from "./suite.js";

defineConformanceSuite(postgresBackend);
