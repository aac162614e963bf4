// What this run has already seen: event keys (with their payload hash and where they were) and the people
// (natural keys) that new events in this run will deliver.
import type { Lead, LeadEvent } from '../mapping/types.js';

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
  private readonly keys = new Map<string, string>();
  private readonly naturals = new Map<string, string>();
  private readonly sources: string[] = [];
  private readonly sourceIndex = new Map<string, number>();
  // Retries arrive close to their first delivery, so recent leads are enough to name a conflict's fields.
  private readonly recent = new Map<string, Lead>();
  // Insertion order of `recent`, as a ring: Map.keys().next() after many deletes walks the deleted slots.
  private readonly recentRing: string[] = new Array<string>(RECENT_LEADS);
  private recentPos = 0;

  hasKey(key: string): boolean {
    return this.keys.has(key);
  }

  getKey(key: string): SeenKey | undefined {
    const v = this.keys.get(key);
    if (v === undefined) return undefined;
    const [hash, src, line] = v.split('\t');
    return { payloadHash: hash!, where: `${this.sources[Number(src)]} line ${line}`, lead: this.recent.get(key) };
  }

  addKey(e: LeadEvent): void {
    let src = this.sourceIndex.get(e.source);
    if (src === undefined) {
      src = this.sources.push(e.source) - 1;
      this.sourceIndex.set(e.source, src);
    }
    this.keys.set(e.key, `${e.payloadHash}\t${src}\t${e.line}`);
    const evicted = this.recentRing[this.recentPos];
    if (evicted !== undefined) this.recent.delete(evicted);
    this.recentRing[this.recentPos] = e.key;
    this.recentPos = (this.recentPos + 1) % RECENT_LEADS;
    this.recent.set(e.key, e.lead);
  }

  getNatural(natural: string): string | undefined {
    const k = this.naturals.get(natural);
    return k === undefined ? undefined : `event ${k}`;
  }

  addNatural(e: LeadEvent): void {
    if (e.naturalKey && !this.naturals.has(e.naturalKey)) this.naturals.set(e.naturalKey, e.key);
  }

  close(): void {
    this.keys.clear();
    this.naturals.clear();
    this.recent.clear();
  }
}
