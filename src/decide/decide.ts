// The decision rules: what a push does with one event, against what this run has already decided and what the
// ledger holds. They are written once, here, as one function over the facts of an event; the engine's decider
// (engine/decider.ts) answers those facts from its blocks and its run memory, and puts the outcome into words.
import type { EventStatus } from '../ledger/types.js';
import type { DecisionKind } from './types.js';

/** What happens to an event, before it is put in words. */
export const enum Outcome {
  /** Not in the ledger, and nobody in this run or the ledger delivered its person: a push sends it. */
  New,
  /** The ledger holds it as a retryable failure: a push claims that row again and sends it. */
  Retry,
  /** This run decided an event of this key with the same lead: a retried delivery. */
  DuplicateInInput,
  /** This run decided an event of this key with another lead: never sent silently. */
  ConflictInInput,
  /** The key was erased from the ledger (forget --email); only its hash remains, which still counts. */
  DuplicateErased,
  /** The ledger holds this key with another lead. */
  ConflictWithLedger,
  /** The ledger holds this key: delivered, being delivered, in doubt or failed for good. */
  DuplicateInLedger,
  /** An earlier event of this run brings the same person. */
  KnownInRun,
  /** The ledger names another event that delivered (or may have delivered) the same person. */
  KnownInLedger,
}

/** The decision kind of each Outcome. */
export const OUTCOME_KINDS: readonly DecisionKind[] = [
  'new',
  'new',
  'duplicate_in_input',
  'conflict',
  'duplicate',
  'conflict',
  'duplicate',
  'known_lead',
  'known_lead',
];

/**
 * What the rules ask about one event, and what they have the run remember. Questions are asked only when a rule
 * needs their answer, in the order classify() asks them.
 */
export interface EventFacts {
  /** This run has decided an event of this key before. */
  keySeen(): boolean;
  /** After keySeen(): that earlier event had the same lead. */
  sameLead(): boolean;
  /** The key counts as seen by this run from now on. */
  rememberKey(): void;
  /** The key's status in the ledger; undefined when the ledger does not hold it. */
  ledgerStatus(): EventStatus | undefined;
  /** The ledger holds only the erased key's hash (forget --email). */
  erased(): boolean;
  /** The ledger stored another lead for the key. */
  ledgerLeadDiffers(): boolean;
  /** The ledger's failure is retryable (a 5xx, a 429 after its retries), not permanent. */
  retryable(): boolean;
  /** The event names a person (a natural key: email, else phone). */
  hasPerson(): boolean;
  /** After hasPerson(): an earlier event of this run brought the same person. */
  personSeen(): boolean;
  /**
   * After hasPerson(): the ledger names an event that delivered, or may have delivered, the person (another event:
   * the one asked about is not delivered, or the rules would not ask).
   */
  personDelivered(): boolean;
  /** The event's person, if it has one, counts as delivered by this run from now on. */
  rememberPerson(): void;
  /** As rememberPerson(), right after personSeen() said no. */
  rememberNewPerson(): void;
}

/** The rules: the outcome of one event, with this run's memory updated through the facts. */
export function classify(f: EventFacts): Outcome {
  if (f.keySeen()) return f.sameLead() ? Outcome.DuplicateInInput : Outcome.ConflictInInput;
  f.rememberKey();

  const status = f.ledgerStatus();
  if (status !== undefined) {
    if (f.erased()) {
      // The ledger forgot who this was; the input still says it, so this run's later events of the person are known.
      f.rememberPerson();
      return Outcome.DuplicateErased;
    }
    if (f.ledgerLeadDiffers()) return Outcome.ConflictWithLedger;
    if (status === 'failed' && f.retryable()) {
      // A retry is a new decision about a person: another event of theirs delivered since this one failed (earlier in
      // this run, or in the ledger) makes it a known lead, as for any event. Without this rule the person reached the
      // CRM twice, and which event won depended on their order in the input.
      if (f.hasPerson()) {
        if (f.personSeen()) return Outcome.KnownInRun;
        if (f.personDelivered()) return Outcome.KnownInLedger;
        f.rememberNewPerson();
      }
      return Outcome.Retry;
    }
    // A delivered (or maybe delivered) event delivered its person too: later events of that person are known leads.
    // A permanent failure delivered nobody.
    if (status !== 'failed') f.rememberPerson();
    return Outcome.DuplicateInLedger;
  }

  if (f.hasPerson()) {
    if (f.personSeen()) return Outcome.KnownInRun;
    if (f.personDelivered()) return Outcome.KnownInLedger;
    f.rememberNewPerson();
  }
  return Outcome.New;
}

/** The reason of a New decision. */
export const NEW_REASON = 'not in the ledger';
/** The reason of a Retry decision. */
export const RETRY_REASON = 'retry: an earlier send failed and may be retried';
/** The reason of a DuplicateErased decision. */
export const ERASED_REASON = 'already delivered (person erased from the ledger)';

/** The reason of a DuplicateInInput decision, naming where the earlier event was. */
export function duplicateInInputReason(earlier: string): string {
  return `same event as ${earlier}`;
}

/** The reason of a conflict: what holds the key, and the lead fields that differ (undefined: not known). */
export function conflictReason(holder: string, fields: string[] | undefined): string {
  return `${holder} with different ${fields?.join(', ') || 'content'}`;
}

/** The reason of a KnownInRun decision, naming the event that brought the person. */
export function knownInRunReason(by: string): string {
  return `same person as ${by}`;
}

/** The reason of a KnownInLedger decision, naming the event the ledger holds for the person. */
export function knownInLedgerReason(by: string): string {
  return `person already delivered (or being delivered) by event ${by}`;
}

/**
 * The reason of a known-lead decision about an event whose earlier send failed (retryable): the person rule's reason,
 * said as a retry's, so that the report tells why a failure is not retried.
 */
export function knownRetryReason(personReason: string): string {
  return `earlier send failed, not retried: ${personReason}`;
}

/**
 * The command that re-sends in-doubt events a sink can neither look up nor have dropped as a repeat (a file, a webhook
 * that does not honour Idempotency-Key), and no other event: every hint for such events names it.
 */
export const RESEND_IN_DOUBT = 'leadledger replay --in-doubt --resend';

/** The reason of a DuplicateInLedger decision: what the ledger's row says, and what to do about it. */
export function ledgerReason(status: string, failure: string | null, runId: number | null): string {
  const run = runId ? ` (run ${runId})` : '';
  switch (status) {
    case 'sent':
      return `already delivered${run}`;
    case 'failed':
      return `failed permanently earlier${run}: fix and use leadledger replay --permanent`;
    case 'in_doubt':
      return `in doubt since${run}: leadledger replay --in-doubt looks it up where the sink can; ${RESEND_IN_DOUBT} re-sends it where it cannot`;
    case 'pending':
      return `being sent by another run${run}`;
    case 'queued':
      return `received by leadledger serve${run}, waiting for delivery`;
    default:
      return `in the ledger as ${status}${failure ? ` (${failure})` : ''}`;
  }
}
