// Decisions on the agent table itself: interning an agent, closing it,
// purging it (refused while it holds an admission, or while its
// conversation is used or has messages queued), and the runtime's draining
// switch.

import { AdmissionState, AgentLifecycle, EffectKind, ResultCode } from "../abi";
import {
  agentAdmission, agentGeneration, allocateAgent, checkAgent, freeAgent, setAgentLifecycle,
} from "../agent-table";
import { conversationUsers, headStarting, queuedMessages } from "../conversation-table";
import { closeInbox } from "./conversation";
import { emit } from "../effects";
import { isFlag, setDraining } from "./shared";

export function applyRegisterAgent(closed: u32): i32 {
  if (!isFlag(closed)) return ResultCode.ArgumentOutOfRange;
  const slot = allocateAgent(closed ? AgentLifecycle.Closed : AgentLifecycle.Open);
  if (slot < 0) return ResultCode.AgentsFull;
  emit(EffectKind.AgentRegistered, <u32>slot, agentGeneration(<u32>slot));
  return ResultCode.Ok;
}

export function applyCloseAgent(agent: u32, generation: u32): i32 {
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return check;
  setAgentLifecycle(agent, AgentLifecycle.Closed);
  // Every start of a closed agent is refused, in any phase: those waiting ask again.
  emit(EffectKind.ReadinessChanged, agent);
  return ResultCode.Ok;
}

export function applyPurgeAgent(agent: u32, generation: u32): i32 {
  const check = checkAgent(agent, generation);
  if (check != ResultCode.Ok) return check;
  if (agentAdmission(agent) != AdmissionState.None) return ResultCode.AgentAdmissionHeld;
  if (conversationUsers(agent) != 0 || queuedMessages(agent) != 0 || headStarting(agent)) return ResultCode.ConversationInUse;
  closeInbox(agent);
  freeAgent(agent);
  return ResultCode.Ok;
}

export function applySetDraining(on: u32): i32 {
  if (!isFlag(on)) return ResultCode.ArgumentOutOfRange;
  setDraining(on);
  return ResultCode.Ok;
}
