// The one interface every destination implements. deliver/ reads what a sink can do from its methods and its
// capabilities instead of special-casing sinks.
import type pg from 'pg';
import type { LeadledgerError } from '../errors.js';
import type { Lead } from '../mapping/types.js';

/**
 * What a sink declares besides its methods. What it can look up is not declared: it is the presence of lookup,
 * lookupMany and findWritten on the sink (canLookUp, canFindWritten), which deliver/ tests.
 */
export interface SinkCapabilities {
  /** Largest number of leads one send() call takes. */
  maxBatch: number;
  /** The destination drops a repeated downstream key: an in-doubt event may simply be re-sent with the same key. */
  honoursIdempotencyKey: boolean;
}

/** One lead handed to a sink. */
export interface SendItem {
  /** The ledger's event key (never sent downstream as is). */
  key: string;
  /** sha256(namespace | event key), hex: the Idempotency-Key sent downstream. */
  downstreamKey: string;
  lead: Lead;
  naturalKey?: string;
  /** When the event happened (ISO 8601 UTC), when the input says: the postgres sink's created_at. */
  occurredAt?: string;
  /** create: a new lead; update: a known lead under `--existing update`. */
  mode: 'create' | 'update';
  /** A create whose person the CRM already holds: settled as `exists` (skip, the default) or updated there. */
  ifExists?: 'skip' | 'update';
}

/** What happened to one lead, in the order of the items sent. */
export type SinkOutcome =
  | { kind: 'created'; crmId?: string }
  | { kind: 'updated'; crmId?: string }
  /** The CRM already had this person (HubSpot 409, Zoho DUPLICATE_DATA...): done, not a failure. */
  | { kind: 'exists'; crmId?: string }
  /** permanent: a 4xx the CRM will give again; retryable: 408/429/5xx/network after retries ran out. */
  | { kind: 'failed'; permanent: boolean; reason: string; status?: number }
  /** The request may have reached the CRM (timeout or reset after sending): the event is in doubt. */
  | { kind: 'unknown'; reason: string }
  /**
   * Nothing reached the CRM: the run stopped while the request waited for the rate limiter or a connection (or only
   * a read was cut). The claim is undone, as if the event had not been taken.
   */
  | { kind: 'released'; reason: string };

/**
 * A field of a lead that a sink has no place for, and why: the lead is written without it. The run counts these
 * per field (RunReport.fieldsNotHeld); a sink hands out the same object for the same field and reason.
 */
export interface FieldNotHeld {
  /** As the config names it: email, phone, name, firstName, lastName, company, source, custom.<name>. */
  field: string;
  why: string;
}

/**
 * What `leadledger doctor` learnt of a destination by one cheap request: whether it answers, takes the credentials
 * and lets them write. fail: a push would not get through; warn: it may, but a person should look.
 */
export interface SinkCheck {
  status: 'ok' | 'warn' | 'fail';
  /** What was found, naming the destination (never a secret). */
  message: string;
  /** What to do about a warn or a fail. */
  hint?: string;
  /** For a fail: the exit code a push would end with (4: credentials refused); 1 when absent. */
  exitCode?: number;
}

/** The result of looking a person up in the CRM. */
export type LookupResult = { found: true; crmId?: string } | { found: false };

/** A destination. Implementations live one per folder in sinks/, each with its definition (definition.ts). */
export interface Sink {
  readonly name: string;
  readonly capabilities: SinkCapabilities;
  /** Send up to capabilities.maxBatch leads; one outcome per item, same order. Throws CredentialsError on 401/403. */
  send(items: SendItem[], signal?: AbortSignal): Promise<SinkOutcome[]>;
  /**
   * Look a person up by natural key (email, or E.164 phone): in-doubt events are checked in the CRM before a re-send.
   * downstreamKey is the key the in-doubt event was sent with: a CRM that records every send (a conversion per POST)
   * finds this event's own send by it; a CRM that holds one record per person may ignore it.
   */
  lookup?(naturalKey: string, signal?: AbortSignal, downstreamKey?: string): Promise<LookupResult>;
  /**
   * Looks many people up at once (one result per key, same order), where the destination can do it in one query:
   * in-doubt recovery then checks a batch at a time instead of one request per event.
   */
  lookupMany?(naturalKeys: string[], signal?: AbortSignal): Promise<LookupResult[]>;
  /**
   * Which of these downstream keys the destination holds whole: in-doubt events are looked for in the destination
   * itself, by the key they were sent with (a JSONL file: its whole lines), before a re-send. Absent where the
   * destination cannot be read back (stdout, a device).
   */
  findWritten?(downstreamKeys: string[], signal?: AbortSignal): Promise<Set<string>>;
  /**
   * One cheap request that tells whether a push would get through: the CRM answers, takes the credentials and lets
   * them read or write (an authenticated GET, a HEAD, a connect and a privilege query, a look at a file's folder).
   * Sends no lead and changes nothing. For `leadledger doctor`.
   */
  check?(signal?: AbortSignal): Promise<SinkCheck>;
  /** Where this sink sends, for messages ("HubSpot at https://api.hubapi.com"); never contains a secret. */
  describe(): string;
  /** The fields of this lead that the sink writes it without (none: an empty array). */
  fieldsNotHeld?(item: SendItem): readonly FieldNotHeld[];
  /**
   * A sink that writes to a PostgreSQL database can write inside a transaction of the ledger's when the ledger lives
   * in that same database, as the same role: the claim, the write and the settle then commit together (deliver.ts).
   */
  shared?: SharedDatabaseWriter;
  /**
   * Why the sink will send nothing more this run (the CRM's daily API budget would run out: a BudgetError), once it
   * decided so; else undefined. Its send() then answers `released` for what it did not send; deliver/ settles the
   * outcomes it got, sends no further batch, and the run ends with this error (the rest goes with the next run).
   */
  stopped?(): LeadledgerError | undefined;
  close?(): Promise<void>;
}

/** How a sink writes inside another's transaction on its database (see Sink.shared). */
export interface SharedDatabaseWriter {
  /** The database and role as the server names them (pg-identity.ts): equal for one database, as one role. */
  readonly database: string;
  /**
   * Writes the leads on this connection, inside its open transaction: one outcome per item, same order. Throws what
   * the database threw; the caller then rolls the transaction back and nothing of it happened.
   */
  write(client: pg.ClientBase, items: SendItem[]): Promise<SinkOutcome[]>;
}

/** Whether in-doubt events can be looked up in the destination by natural key (lookup or lookupMany). */
export function canLookUp(sink: Sink): boolean {
  return !!sink.lookup || !!sink.lookupMany;
}

/** Whether in-doubt events can be looked for in the destination by the downstream key they were sent with. */
export function canFindWritten(sink: Sink): boolean {
  return !!sink.findWritten;
}
