// What mapping/ hands to decide/: a normalized lead event with its keys, or a rejection with its reason.

/** A lead as leadledger sends it: normalized, no empty fields. */
export interface Lead {
  /** Trimmed, lower-cased, validated. */
  email?: string;
  /** E.164, e.g. +5511987654321. */
  phone?: string;
  /** Full name, whitespace collapsed. */
  name?: string;
  firstName?: string;
  lastName?: string;
  company?: string;
  /** Where the lead came from (utm_source, origem, ...). */
  source?: string;
  /** Extra fields mapped by the config file, sent as they are. */
  custom?: Record<string, string>;
}

/** How an event key was made: the event's own id, or a hash over chosen content fields. */
export type KeyKind = 'id' | 'content';

/** One input record mapped to a lead, with everything decide/ and deliver/ need. */
export interface LeadEvent {
  kind: 'event';
  source: string;
  line: number;
  /** Which of the events of its line or record this is (1-based), where the record held several. */
  item?: number;
  /** The event key: the event's id, or `c:` + sha256 of chosen normalized fields. */
  key: string;
  keyKind: KeyKind;
  /** sha256 over the canonical normalized lead: same key + other hash = conflict. */
  payloadHash: string;
  /** Normalized email, else E.164 phone: identifies the person across events. */
  naturalKey?: string;
  /** The event type when the record has one (lead.created, ...). */
  type?: string;
  /** Event time as ISO 8601 UTC, when the record has one. */
  occurredAt?: string;
  lead: Lead;
  /** The lead as canonical JSON (what the payload hash is taken over), when the mapper made it. */
  leadJson?: string;
  /** What a person should know about how the lead was read (a value altered by decoding, a field left out). */
  warnings?: string[];
  /** Its phone was written without a calling code: the default country decided how it reads (counted per run). */
  nationalPhone?: true;
  /**
   * The event's downstream key (mapping/keys.ts downstreamKey) for the run's namespace, where the map workers took it
   * (a push's: DecideInputsOptions.downstreamNamespace); else the sender takes it.
   */
  downstreamKey?: string;
  /** Events read back from a block (engine/block.ts): decodes what they still read from it, before it is reused. */
  detach?(): void;
}

/** A record that cannot become a lead event. */
export interface MapReject {
  kind: 'invalid';
  source: string;
  line: number;
  item?: number;
  key?: string;
  reason: string;
  /** The field at fault, when one is. */
  field?: string;
  /** Its phone, written without a calling code, is what made it invalid (see LeadEvent.nationalPhone). */
  nationalPhone?: true;
}

/** A record set aside by --type / --since / --until, or by what its source says (a test lead, a log line). */
export interface MapFiltered {
  kind: 'filtered';
  source: string;
  line: number;
  item?: number;
  key?: string;
  naturalKey?: string;
  reason: string;
}

export type Mapped = LeadEvent | MapReject | MapFiltered;
