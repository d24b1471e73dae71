import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Custom search attributes: registered on the server at start, set by every workflow, so an operator can filter runs in the Temporal UI. */
export const QuorumOrg = defineSearchAttributeKey('QuorumOrg', SearchAttributeType.KEYWORD);
export const QuorumMode = defineSearchAttributeKey('QuorumMode', SearchAttributeType.KEYWORD);
export const QuorumLane = defineSearchAttributeKey('QuorumLane', SearchAttributeType.KEYWORD);
export const QuorumStatus = defineSearchAttributeKey('QuorumStatus', SearchAttributeType.KEYWORD);

/** A run's kind: `test` or `certification`. */
export const QuorumKind = defineSearchAttributeKey('QuorumKind', SearchAttributeType.KEYWORD);

export const quorumSearchAttributes = [QuorumOrg, QuorumMode, QuorumLane, QuorumStatus, QuorumKind] as const;
