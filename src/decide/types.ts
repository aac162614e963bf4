// The plan: one decision per record read. deliver/ applies it; report/ counts and prints it.
import type { LeadEvent } from '../mapping/types.js';

/** Every record read gets exactly one of these. */
export const DECISION_KINDS = ['new', 'duplicate', 'duplicate_in_input', 'conflict', 'known_lead', 'invalid', 'filtered'] as const;
export type DecisionKind = (typeof DECISION_KINDS)[number];

/** What a push would do with one record, and why. */
export interface Decision {
  kind: DecisionKind;
  source: string;
  line: number;
  key?: string;
  /** The person (normalized email, else E.164 phone), where the decision was not made from an event (replay). */
  naturalKey?: string;
  reason: string;
  /** Present for new, known_lead, duplicate and conflict decisions. */
  event?: LeadEvent;
  /** new: the ledger holds the key as a retryable failure; the send claims the existing row. */
  retry?: boolean;
  /** conflict: the lead fields that differ. */
  fields?: string[];
}
