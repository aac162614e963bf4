// The reference the engine is held to: the general path, one record at a time. The readers of sources/ read the
// input, createMapper() maps each record, and the decision rules of decide/decide.ts decide it against plain maps of
// what this run has seen (exact strings, not fingerprints) and what the ledger says (its own lookups, not the
// engine's index). Slow and obvious on purpose: the engine may do anything it likes, but must decide alike.
import {
  classify,
  conflictReason,
  duplicateInInputReason,
  ERASED_REASON,
  knownInLedgerReason,
  knownInRunReason,
  knownRetryReason,
  ledgerReason,
  NEW_REASON,
  Outcome,
  OUTCOME_KINDS,
  RETRY_REASON,
  type EventFacts,
} from '../../src/decide/decide.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import type { EventStatus, KnownKey } from '../../src/ledger/types.js';
import { differingFields, payloadHashOfJson } from '../../src/mapping/keys.js';
import { createMapper, mapItem, type MapOptions } from '../../src/mapping/map-record.js';
import { yearLastParts, type DateColumns, type OrderUsed } from '../../src/mapping/times.js';
import type { Lead, LeadEvent } from '../../src/mapping/types.js';
import { readInputs } from '../../src/sources/read-inputs.js';
import type { ReadOptions, RawUnread } from '../../src/sources/types.js';

/** A decision as plain data, for comparing paths. */
export interface PlainDecision {
  kind: string;
  source: string;
  line: number;
  /** Which event of its line or array this is, where there were several. */
  item?: number;
  key?: string;
  reason: string;
  retry?: boolean;
  fields?: string[];
  event?: {
    key: string;
    keyKind: string;
    naturalKey?: string;
    leadJson: string;
    payloadHash: string;
    type?: string;
    occurredAt?: string;
    warnings?: string[];
  };
}

/** What every path must agree on: the decisions, the parts of the inputs not read, and the national phones read. */
export interface PathResult {
  decisions: PlainDecision[];
  unread: Array<{ source: string; line: number; toLine?: number; reason: string }>;
  nationalPhones: number;
}

/** A decision of any path as plain data (an engine event is read out of its block here). */
export function plainDecision(d: {
  kind: string;
  source: string;
  line: number;
  item?: number;
  key?: string;
  reason: string;
  retry?: boolean;
  fields?: string[];
  event?: LeadEvent;
}): PlainDecision {
  const out: PlainDecision = { kind: d.kind, source: d.source, line: d.line, reason: d.reason };
  if (d.item !== undefined) out.item = d.item;
  if (d.key !== undefined) out.key = d.key;
  if (d.retry) out.retry = true;
  if (d.fields) out.fields = d.fields;
  const e = d.event;
  if (e) {
    const leadJson = e.leadJson ?? JSON.stringify(e.lead);
    out.event = { key: e.key, keyKind: e.keyKind, leadJson, payloadHash: e.payloadHash || payloadHashOfJson(leadJson) };
    if (e.naturalKey) out.event.naturalKey = e.naturalKey;
    if (e.type) out.event.type = e.type;
    if (e.occurredAt) out.event.occurredAt = e.occurredAt;
    if (e.warnings?.length) out.event.warnings = [...e.warnings];
  }
  return out;
}

// What UTF-8 makes of a string with a lone surrogate (the engine keeps keys and people as UTF-8 bytes).
const wellFormed = (s: string): string => (s as string & { toWellFormed(): string }).toWellFormed();

/** Decides the inputs the reference way. */
export async function referenceDecisions(
  inputs: string[],
  read: ReadOptions,
  map: MapOptions,
  ledger: Ledger | undefined,
): Promise<PathResult> {
  // The order of each field's dates in each input, from its first records (as presets/date-sample.ts decides it).
  const columns = new Map<string, DateColumns>();
  for (const input of inputs) {
    for (const [source, c] of await dateColumnsOf(input, read, map)) columns.set(source, c);
  }
  // A mapper of its own for every record: no plan cached from the records before can change how one is read.
  const mapperFor = (source: string) =>
    createMapper({ ...map, dateColumns: columns.get(source) ?? new Map() }, { hashLater: true });
  const seenKeys = new Map<string, { leadJson: string; where: string; key: string }>();
  const seenPeople = new Map<string, string>(); // person → the event key that brought them
  const decisions: PlainDecision[] = [];
  const unread: PathResult['unread'] = [];
  let nationalPhones = 0;
  for await (const batch of readInputs(inputs, read)) {
    for (const item of batch) {
      if (item.kind === 'unread') {
        unread.push(unreadOf(item));
        continue;
      }
      const m = mapItem(mapperFor(item.source), item);
      if (m.kind !== 'filtered' && m.nationalPhone) nationalPhones++;
      if (m.kind !== 'event') {
        decisions.push(
          plainDecision({
            kind: m.kind,
            source: m.source,
            line: m.line,
            item: m.item,
            key: m.key ? wellFormed(m.key) : undefined,
            reason: wellFormed(m.reason),
          }),
        );
        continue;
      }
      const key = wellFormed(m.key);
      const person = m.naturalKey ? wellFormed(m.naturalKey) : undefined;
      const leadJson = m.leadJson ?? JSON.stringify(m.lead);
      const hash = m.payloadHash || payloadHashOfJson(leadJson);
      const known: KnownKey | undefined = ledger?.lookupKeys([key]).get(key);
      let by: string | undefined;
      let earlier: { leadJson: string; where: string; key: string } | undefined;
      const facts: EventFacts = {
        keySeen: () => (earlier = seenKeys.get(key)) !== undefined,
        sameLead: () => earlier!.leadJson === leadJson,
        rememberKey: () => void seenKeys.set(key, { leadJson, where: `${m.source} line ${m.line}`, key }),
        ledgerStatus: (): EventStatus | undefined => known?.status,
        erased: () => known?.tombstone === true,
        ledgerLeadDiffers: () => known !== undefined && known.payloadHash !== null && known.payloadHash !== hash,
        retryable: () => known?.failure === 'retryable',
        hasPerson: () => person !== undefined,
        personSeen: () => (by = seenPeople.get(person!)) !== undefined,
        personDelivered: () => (by = ledger?.lookupDelivered([person!]).get(person!)) !== undefined,
        rememberPerson: () => {
          if (person !== undefined && !seenPeople.has(person)) seenPeople.set(person, key);
        },
        rememberNewPerson: () => void seenPeople.set(person!, key),
      };
      const out = classify(facts);
      const event = { ...m, key, naturalKey: person, leadJson, payloadHash: hash, type: m.type && wellFormed(m.type) };
      const base = { kind: OUTCOME_KINDS[out]!, source: m.source, line: m.line, item: m.item, key, event };
      const lead = m.lead as Lead;
      switch (out) {
        case Outcome.New:
          decisions.push(plainDecision({ ...base, reason: NEW_REASON }));
          break;
        case Outcome.Retry:
          decisions.push(plainDecision({ ...base, reason: RETRY_REASON, retry: true }));
          break;
        case Outcome.DuplicateInInput:
          decisions.push(plainDecision({ ...base, reason: duplicateInInputReason(earlier!.where) }));
          break;
        case Outcome.ConflictInInput: {
          const fields = differingFields(JSON.parse(earlier!.leadJson) as Lead, lead);
          decisions.push(
            plainDecision({ ...base, fields, reason: conflictReason(`same key as ${earlier!.where}`, fields) }),
          );
          break;
        }
        case Outcome.DuplicateErased:
          decisions.push(plainDecision({ ...base, reason: ERASED_REASON }));
          break;
        case Outcome.ConflictWithLedger: {
          const stored = ledger?.getLeadJson(key);
          const fields = stored ? differingFields(JSON.parse(stored) as Lead, lead) : undefined;
          decisions.push(
            plainDecision({
              ...base,
              ...(fields ? { fields } : {}),
              reason: conflictReason('ledger holds this key', fields),
            }),
          );
          break;
        }
        case Outcome.DuplicateInLedger:
          decisions.push(
            plainDecision({ ...base, reason: ledgerReason(known!.status, known!.failure, known!.runId || null) }),
          );
          break;
        case Outcome.KnownInRun:
        case Outcome.KnownInLedger: {
          const reason = out === Outcome.KnownInRun ? knownInRunReason(`event ${by!}`) : knownInLedgerReason(by!);
          // A retryable failure's event whose person another event delivered: a retry the person rule stops.
          const retry = known?.status === 'failed' && known.failure === 'retryable';
          decisions.push(
            plainDecision(retry ? { ...base, reason: knownRetryReason(reason), retry } : { ...base, reason }),
          );
          break;
        }
      }
    }
  }
  return { decisions, unread, nationalPhones };
}

/**
 * The date columns of one input (and the source its records carry): for each field path, the order shown by the
 * first of its dates among the input's first 1,000 records that has one part over 12 and not the other.
 */
async function dateColumnsOf(input: string, read: ReadOptions, map: MapOptions): Promise<Map<string, DateColumns>> {
  const out = new Map<string, Map<string, OrderUsed>>();
  let records = 0;
  for await (const batch of readInputs([input], read)) {
    for (const item of batch) {
      if (item.kind !== 'record') continue;
      if (++records > 1000) return out;
      let columns = out.get(item.source);
      if (!columns) out.set(item.source, (columns = new Map()));
      const c = columns;
      const onTime = (path: string, raw: string, line: number): void => {
        const parts = yearLastParts(raw);
        if (!parts || c.has(path) || parts[0] > 12 === parts[1] > 12) return;
        c.set(path, { order: parts[0] > 12 ? 'dmy' : 'mdy', why: `as its dates show: '${raw}' at line ${line}` });
      };
      mapItem(createMapper({ ...map, onTime }), item);
    }
  }
  return out;
}

function unreadOf(u: RawUnread): PathResult['unread'][number] {
  return u.toLine === undefined
    ? { source: u.source, line: u.line, reason: u.reason }
    : { source: u.source, line: u.line, toLine: u.toLine, reason: u.reason };
}
