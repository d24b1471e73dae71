/**
 * The activity log's vocabulary (issue 41 item 6): what kinds of account change are recorded, who made one and from
 * where. A record says what changed and never carries a secret: a key is named by its id and display
 * (`qrm_live_…abcd`), a provider key by its family, a signing secret not at all.
 */
export const ACTIVITY_KINDS = [
  'key.created',
  'key.revoked',
  'key.budget_set',
  'provider_key.set',
  'provider_key.removed',
  'member.invited',
  'member.removed',
  'mode.released',
  'mode.listed',
  'webhook_secret.rotated',
  'retention.changed',
  'alerts.changed',
  'plan.changed',
] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

export const ACTIVITY_EDGES = ['console', 'api', 'cli', 'mcp'] as const;
export type ActivityEdge = (typeof ACTIVITY_EDGES)[number];

/** Who made a change and from where: a person (console), a key (api, mcp), or the operator (cli, no id). */
export interface ActivityActor {
  kind: 'person' | 'key' | 'operator';
  id: string | null;
  edge: ActivityEdge;
  /** The client's address as the edge saw it; null where there is none (the CLI). */
  ip: string | null;
}

/** One change to record: its kind, what it was about (`subject`: a key id, a mode, a family…) and its own fields. */
export interface ActivityChange {
  kind: ActivityKind;
  subject?: string | null;
  detail?: Record<string, unknown>;
}

export function isActivityKind(value: string): value is ActivityKind {
  return (ACTIVITY_KINDS as readonly string[]).includes(value);
}
