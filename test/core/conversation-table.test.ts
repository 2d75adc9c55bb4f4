// The conversation table and the admission decision, walked case by case:
// the compiled core's exported tables against the reference model's
// (test/model/reference-conversations.ts, a list of rows and an ordered
// list of rules), every pair and every input, out-of-range ones included.

import { beforeAll, expect, it } from "vitest";
import { AdmissionSituation, ConversationEventLimit, ConversationPhaseLimit } from "../../assembly/abi.js";
import { ControlCore } from "../../host/core/control-core.js";
import { loadCoreModule } from "../../host/core/load-core.js";
import { admissionVerdictFor, conversationNextOf } from "../model/reference-conversations.js";

let core: ControlCore;
beforeAll(async () => {
  core = new ControlCore(await loadCoreModule("debug"), { agentsMax: 1, executionsMax: 1 });
});

it("the compiled conversation table is the model's, pair by pair", () => {
  for (let phase = 0; phase <= ConversationPhaseLimit.End; phase += 1) {
    for (let event = 0; event <= ConversationEventLimit.End; event += 1) {
      expect(core.conversationTransition(phase, event), `phase ${phase} event ${event}`).toBe(conversationNextOf(phase, event) ?? 0);
    }
  }
});

it("the compiled admission decision is the model's rules for every phase, source, policy and situation", () => {
  for (let phase = 0; phase <= ConversationPhaseLimit.End; phase += 1) {
    for (let source = 0; source <= 6; source += 1) {
      for (let policy = 0; policy <= 4; policy += 1) {
        for (let situation = 0; situation <= AdmissionSituation.End; situation += 1) {
          const valid =
            phase >= 1 && phase < ConversationPhaseLimit.End && source >= 1 && source <= 5 && policy >= 1 && policy <= 3 && situation < AdmissionSituation.End;
          const expected = valid
            ? admissionVerdictFor({
                phase,
                source,
                policy,
                closed: (situation & AdmissionSituation.Closed) !== 0,
                admissionHeld: (situation & AdmissionSituation.AdmissionHeld) !== 0,
                queued: (situation & AdmissionSituation.Queued) !== 0,
                headStarting: (situation & AdmissionSituation.HeadStarting) !== 0,
                queueKept: (situation & AdmissionSituation.QueueKept) !== 0,
                recoveryHeld: (situation & AdmissionSituation.RecoveryHeld) !== 0,
                canFile: (situation & AdmissionSituation.CanFile) !== 0,
                canTakeHere: (situation & AdmissionSituation.CanTakeHere) !== 0,
              })
            : 0;
          expect(core.admissionVerdict(phase, source, policy, situation), `phase ${phase} source ${source} policy ${policy} situation ${situation}`).toBe(
            expected,
          );
        }
      }
    }
  }
});
