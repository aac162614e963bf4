// The plan: one decision per record read. deliver/ applies it; report/ counts and prints it.
import type { Lead, LeadEvent } from '../mapping/types.js';

/** Every record read gets exactly one of these. */
export const DECISION_KINDS = [
  'new',
  'duplicate',
  'duplicate_in_input',
  'conflict',
  'known_lead',
  'invalid',
  'filtered',
] as const;
export type DecisionKind = (typeof DECISION_KINDS)[number];

/** What a push would do with one record, and why. */
export interface Decision {
  kind: DecisionKind;
  source: string;
  line: number;
  /** Which of the events of its line or record this is (1-based), where it held several (a JSON array, leads[]). */
  item?: number;
  key?: string;
  /** The person (normalized email, else E.164 phone), where the decision was not made from an event (replay). */
  naturalKey?: string;
  reason: string;
  /** Present for new, known_lead, duplicate and conflict decisions. */
  event?: LeadEvent;
  /**
   * new, or known_lead: the ledger holds the key as a retryable failure; a send (new, or an update under --existing
   * update) claims the existing row.
   */
  retry?: boolean;
  /** conflict: the lead fields that differ. */
  fields?: string[];
  /** conflict: the lead the key is held with (the ledger's, or this run's earlier event's), where it is known. */
  held?: Lead;
  /** duplicate: the ledger holds the event in doubt since an earlier run (it may or may not have been delivered). */
  inDoubt?: boolean;
}

/**
 * Where decisions go when only their counts are wanted (a dry-run that writes no report rows): counted by kind,
 * and made whole only while the tally wants them (for examples).
 */
export interface DecisionTally {
  /** By kind, in DECISION_KINDS order: true while decisions of that kind are wanted whole (given to add). */
  readonly wanted: boolean[];
  /** A decision made whole. */
  add(d: Decision): void;
  /** The warnings of a record whose decision was only counted (those given to add carry their own). */
  addWarnings(source: string, line: number, key: string | undefined, warnings: readonly string[]): void;
  /** Decisions of a source counted, by kind in DECISION_KINDS order (those given to add are not among them). */
  addCounts(source: string, counts: Int32Array): void;
}
