// Writes docs/fsm.md from the compiled core (npm run build:docs).

import { writeFile } from "node:fs/promises";
import { ControlCore } from "../host/core/control-core.js";
import { renderFsmDocument } from "./fsm-document.js";

const core = await ControlCore.create({ agentsMax: 1, executionsMax: 1 });
const target = new URL("../docs/fsm.md", import.meta.url);
await writeFile(target, renderFsmDocument(core));
console.log(`wrote ${target.pathname}`);
