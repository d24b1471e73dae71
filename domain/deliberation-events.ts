import type { Lane } from './classifier';
import type { Depth } from './modes';

/**
 * A deliberation's steps as its caller sees them (issue 40 item 2): the workflow hands each to the worker as it
 * happens (a sink, workflows/deliberation.ts), which stores it under the step's index; a response's stream
 * (`quorum.*` events) and MCP `deliberate`'s progress notifications read them from there. Times are the worker's
 * wall clock when the step's engine call ended, so a reader can tell how late it heard of it.
 */
export type DeliberationEvent =
  | { type: 'classified'; lane: Lane; depth: Depth }
  | { type: 'grounded'; fired: boolean; snippets: number }
  | { type: 'seat_answered'; round: number; role: string; model: string; seatsAnswered: number; seats: number; endedAt: string }
  | { type: 'judged'; round: number; judgedBy: 'llm' | 'heuristic'; converged: boolean; endedAt: string | null }
  | { type: 'critique_round'; round: number; seats: number }
  | { type: 'synthesising' }
  /** Issue 52: the seats' answers were counted (a mode with `aggregation`): how, and whether a first wave sufficed. */
  | { type: 'aggregated'; method: 'synthesis' | 'select' | 'vote'; decidedBy: string; earlyStop: boolean; votes: number; seats: number }
  /** Not a step: the last index, written once the request has ended (answered, failed or cancelled). */
  | { type: 'ended' };

export type StepEvent = Exclude<DeliberationEvent, { type: 'ended' }>;

/** One stored event: its index in the deliberation (from 0, no gaps) and when the worker stored it. */
export interface StoredEvent {
  index: number;
  event: DeliberationEvent;
  recordedAt: Date;
}

/**
 * One piece of a watched deliberation's answer as its engine wrote it (issue 53 item 4): stored after the step index it
 * follows, numbered from 0 within it; the pieces of a step joined are the start of the answer, or all of it.
 */
export interface AnswerChunk {
  step: number;
  part: number;
  text: string;
}

/** A line for a person watching (MCP progress notifications). */
export function describeEvent(e: StepEvent): string {
  switch (e.type) {
    case 'classified':
      return `classified: ${e.lane} lane, ${e.depth} depth`;
    case 'grounded':
      return e.fired ? `grounded: ${e.snippets} search snippet(s)` : 'grounding found nothing';
    case 'seat_answered':
      return e.round === 1
        ? `seats answering: ${e.seatsAnswered}/${e.seats} (${e.role} answered)`
        : `critique round ${e.round}: ${e.seatsAnswered}/${e.seats} seats revised`;
    case 'judged':
      return `judged round ${e.round}: the seats ${e.converged ? 'agree' : 'split'}`;
    case 'critique_round':
      return `critique round ${e.round}: ${e.seats} seats revising`;
    case 'synthesising':
      return 'synthesising the answer';
    case 'aggregated':
      return e.method === 'vote'
        ? `voted: ${e.votes} of ${e.seats} seats for the answer (${e.decidedBy})${e.earlyStop ? ', the first wave agreed' : ''}`
        : `seat chosen (${e.decidedBy})`;
  }
}
