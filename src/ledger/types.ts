// The ledger's vocabulary: statuses, rows, claims and settlements, shared by the store, its lookups and its users.

/**
 * Event statuses of the ledger state machine (docs/architecture.md). `queued`: received by `leadledger serve` and
 * acknowledged to its sender, not yet claimed for delivery (the receiver's inbox).
 */
export type EventStatus = 'pending' | 'sent' | 'failed' | 'in_doubt' | 'queued';

/** What decide/ needs to know about a key already in the ledger. */
export interface KnownKey {
  payloadHash: string | null;
  status: EventStatus;
  failure: 'permanent' | 'retryable' | null;
  runId: number | null;
  /** true when the key was erased by `forget --email`: only its hash remains. */
  tombstone?: boolean;
}

/** A new event to claim: one committed INSERT before its send. */
export interface ClaimInput {
  key: string;
  keyKind: string;
  payloadHash: string;
  naturalKey?: string;
  downstreamKey: string;
  leadJson: string;
  source: string;
  line: number;
  eventTime?: string;
}

/** How one send ended, to be committed after it. */
export interface Settlement {
  key: string;
  status: 'sent' | 'failed' | 'in_doubt';
  outcome?: 'created' | 'updated' | 'exists' | 'recovered';
  failure?: 'permanent' | 'retryable';
  crmId?: string;
  error?: string;
}

/** A full events row, as replay and the ledger commands read it. */
export interface LedgerEventRow {
  key: string;
  key_kind: string;
  payload_hash: string | null;
  natural_key: string | null;
  status: EventStatus;
  failure: string | null;
  outcome: string | null;
  crm_id: string | null;
  attempts: number;
  last_error: string | null;
  sink: string | null;
  downstream_key: string | null;
  lead_json: string | null;
  source: string | null;
  source_line: number | null;
  event_time: string | null;
  run_id: number | null;
  first_seen_at: string;
  updated_at: string;
  sent_at: string | null;
}

/** What an index is built from, a row of events (the columns build() reads in SQL). */
export interface IndexRow {
  key: string;
  status: string;
  failure: string | null;
  payload_hash: string | null;
  run_id: number | null;
  natural_key: string | null;
}
