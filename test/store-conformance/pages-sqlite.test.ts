// Paging, search and counts on the embedded SQLite store (a temporary file).

import { sqliteBackend } from "./backends.js";
import { definePagesSuite } from "./pages-suite.js";

definePagesSuite(sqliteBackend);
