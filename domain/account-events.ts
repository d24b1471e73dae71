/**
 * Account events (issue 41 item 4): what the organisation's webhook carries besides run callbacks, signed the same way
 * (domain/webhook-signature.ts). Each is raised once per organisation and `dedupeKey` (a unique key in Postgres) and
 * delivered at least once with the same id and body on every attempt. Adding a type is one line here plus the code
 * that raises it with `raiseAccountEvent` (db/repositories/account-events.ts).
 */
export const ACCOUNT_EVENT_TYPES = {
  /** The balance fell below the owner's threshold (raised in the charge's own transaction, db/repositories/ledger.ts). */
  'balance.low': 'The balance fell below the threshold set for it.',
  /** 7 days and 1 day before the trial credit expires (the hourly upkeep schedule, workflows/account-upkeep.ts). */
  'trial.expiring': 'The trial credit expires soon.',
  /** A key's monthly budget was reached (raised where the budget is enforced). */
  'key.budget_reached': "A key's monthly budget was reached.",
  /** A key expires soon (raised by the upkeep schedule's scan of key expiries). */
  'key.expiring': 'A key expires soon.',
} as const;

export type AccountEventType = keyof typeof ACCOUNT_EVENT_TYPES;

export const ACCOUNT_EVENT_STATES = ['pending', 'delivered', 'failed', 'no_endpoint'] as const;
export type AccountEventState = (typeof ACCOUNT_EVENT_STATES)[number];

/** What a receiver gets: Stripe's event shape, as `run.ended` has (domain/run-event.ts). */
export interface AccountEventBody {
  id: string;
  object: 'event';
  type: AccountEventType;
  /** Unix seconds: when the event was raised. */
  created: number;
  organization: string;
  data: Record<string, string | number | boolean | null>;
}

/**
 * The expiry alerts' lead times (`trial.expiring`, `key.expiring`), nearest last: each fires once, and only the
 * nearest one still ahead is raised (dedupe key `…:<days>d`).
 */
export const EXPIRY_ALERT_DAYS = [7, 1] as const;

/** Which expiry alert is due `msLeft` before the end (null: none, or it already ended). */
export function expiryAlertDue(msLeft: number): (typeof EXPIRY_ALERT_DAYS)[number] | null {
  if (msLeft <= 0) return null;
  const due = EXPIRY_ALERT_DAYS.filter((d) => msLeft <= d * 86_400_000);
  return due.length > 0 ? due[due.length - 1] : null;
}
