// Paging, search and counts on PostgreSQL (a fresh schema per test).

import { postgresBackend } from "./backends.js";
import { definePagesSuite } from "./pages-suite.js";

definePagesSuite(postgresBackend);
