// What this run has already seen: event keys (with their payload hash and where they were) and the people
// (natural keys) that new events in this run will deliver. Both live in SpillMaps, so a 10-million-event audit
// holds a bounded number of them in memory and the rest in a temporary SQLite file.
import type { Lead, LeadEvent } from '../mapping/types.js';
import { SpillMap } from './spill-map.js';

/** An event key seen earlier in this run. */
export interface SeenKey {
  payloadHash: string;
  where: string;
  /** The earlier lead, while it is recent enough to be kept (for naming the fields of a conflict). */
  lead?: Lead;
}

const RECENT_LEADS = 20_000;

/** In-run memory of keys and people. */
export class RunMemory {
  private readonly keys: SpillMap;
  private readonly naturals: SpillMap;
  private readonly sources: string[] = [];
  private readonly sourceIndex = new Map<string, number>();
  // Retries arrive close to their first delivery, so recent leads are enough to name a conflict's fields. They
  // live in a ring indexed by the key's add number (kept in its memory entry): no Map set and delete per key.
  private readonly ringKeys: Array<string | undefined> = new Array<string | undefined>(RECENT_LEADS);
  private readonly ringLeads: Array<Lead | undefined> = new Array<Lead | undefined>(RECENT_LEADS);
  private added = 0;

  /** capacity: entries of each kind held in memory before spilling (tests make it tiny). */
  constructor(capacity?: number) {
    this.keys = new SpillMap(capacity);
    this.naturals = new SpillMap(capacity);
  }

  hasKey(key: string): boolean {
    return this.keys.get(key) !== undefined;
  }

  getKey(key: string): SeenKey | undefined {
    const v = this.keys.get(key);
    if (v === undefined) return undefined;
    const [hash, src, line, n] = v.split('\t');
    const slot = Number(n) % RECENT_LEADS;
    const lead = this.ringKeys[slot] === key ? this.ringLeads[slot] : undefined;
    return { payloadHash: hash!, where: `${this.sources[Number(src)]} line ${line}`, lead };
  }

  addKey(e: LeadEvent): void {
    let src = this.sourceIndex.get(e.source);
    if (src === undefined) {
      src = this.sources.push(e.source) - 1;
      this.sourceIndex.set(e.source, src);
    }
    const n = this.added++;
    // join builds one flat string; a template literal would keep a chain of cons strings alive per key.
    this.keys.add(e.key, [e.payloadHash, src, e.line, n].join('\t'));
    // Keys are added once, so the slot still holding this key means it is among the last RECENT_LEADS added.
    this.ringKeys[n % RECENT_LEADS] = e.key;
    this.ringLeads[n % RECENT_LEADS] = e.lead;
  }

  getNatural(natural: string): string | undefined {
    const k = this.naturals.get(natural);
    return k === undefined ? undefined : `event ${k}`;
  }

  /** Records the person of a new event; the caller has just seen getNatural miss it (saves a lookup per record). */
  addAbsentNatural(natural: string, key: string): void {
    this.naturals.add(natural, key);
  }

  addNatural(e: LeadEvent): void {
    if (e.naturalKey && this.naturals.get(e.naturalKey) === undefined) this.naturals.add(e.naturalKey, e.key);
  }

  close(): void {
    this.keys.close();
    this.naturals.close();
    this.ringKeys.fill(undefined);
    this.ringLeads.fill(undefined);
  }
}
