// The receiver's counters, served at /metrics in Prometheus' text format (version 0.0.4): what came in and what
// became of it, what was delivered, the inbox's depth and the CRM's latency. Labels are endpoint names and fixed
// words, never a header, a key or anything a sender wrote.

/** Buckets of the latency histograms, in seconds. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

class Histogram {
  readonly counts = new Array<number>(BUCKETS.length).fill(0);
  sum = 0;
  n = 0;

  observe(seconds: number): void {
    this.sum += seconds;
    this.n++;
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) this.counts[i]!++;
  }

  lines(name: string, labels = ''): string[] {
    const l = (extra: string) => `{${[labels, extra].filter(Boolean).join(',')}}`;
    const out = BUCKETS.map((b, i) => `${name}_bucket${l(`le="${b}"`)} ${this.counts[i]}`);
    out.push(`${name}_bucket${l('le="+Inf"')} ${this.n}`);
    out.push(`${name}_sum${labels ? `{${labels}}` : ''} ${this.sum}`);
    out.push(`${name}_count${labels ? `{${labels}}` : ''} ${this.n}`);
    return out;
  }
}

/** A counter with labels, kept as label text → value. */
class Counter {
  readonly values = new Map<string, number>();

  inc(labels: Record<string, string>, by = 1): void {
    const k = Object.entries(labels)
      .map(([n, v]) => `${n}="${escapeLabel(v)}"`)
      .join(',');
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }

  total(match: (labels: string) => boolean = () => true): number {
    let t = 0;
    for (const [k, v] of this.values) if (match(k)) t += v;
    return t;
  }
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** What the receiver counts. */
export class ServeMetrics {
  /** Requests answered, by endpoint and status code. */
  readonly requests = new Counter();
  /** Events received, by endpoint and what became of them (accepted, duplicate, conflict, known_lead, ...). */
  readonly events = new Counter();
  /** Requests refused for their signature, by endpoint and why (missing, malformed, mismatch, stale). */
  readonly signatureFailures = new Counter();
  /** Events settled by the delivery, by result (sent, updated, exists, recovered, failed, in_doubt, ...). */
  readonly delivered = new Counter();
  readonly ackLatency = new Histogram();
  readonly crmLatency = new Histogram();
  inboxEvents = 0;
  inboxBytes = 0;
  /** Events in the ledger in doubt on this sink, as last counted. */
  inDoubt = 0;
  ledgerUp = 1;
  deliveryBlocked = 0;

  /** The text /metrics serves. */
  text(): string {
    const out: string[] = [];
    const counter = (name: string, help: string, c: Counter) => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
      for (const [k, v] of c.values) out.push(`${name}{${k}} ${v}`);
    };
    const gauge = (name: string, help: string, v: number) =>
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name} ${v}`);
    counter('leadledger_serve_requests_total', 'HTTP requests answered, by endpoint and status code.', this.requests);
    counter(
      'leadledger_serve_events_total',
      'Events received, by endpoint and result (accepted, duplicate, conflict, known_lead, invalid, filtered).',
      this.events,
    );
    counter(
      'leadledger_serve_signature_failures_total',
      'Requests refused (401) for their signature, by endpoint and reason.',
      this.signatureFailures,
    );
    counter(
      'leadledger_serve_delivered_total',
      'Events settled by delivery, by result (sent, updated, exists, recovered, failed, in_doubt, released).',
      this.delivered,
    );
    gauge(
      'leadledger_serve_inbox_depth',
      'Events acknowledged and not yet delivered (queued in the ledger).',
      this.inboxEvents,
    );
    gauge('leadledger_serve_inbox_bytes', 'Bytes of the leads queued in the ledger.', this.inboxBytes);
    gauge('leadledger_serve_in_doubt', 'Events in doubt on this sink in the ledger.', this.inDoubt);
    gauge('leadledger_serve_ledger_up', '1 when the ledger answered its last check.', this.ledgerUp);
    gauge(
      'leadledger_serve_delivery_blocked',
      '1 while delivery is paused (the CRM unreachable or refusing the credentials).',
      this.deliveryBlocked,
    );
    out.push(
      '# HELP leadledger_serve_ack_seconds Time from a request to its 2xx (the commit to the ledger included).',
      '# TYPE leadledger_serve_ack_seconds histogram',
      ...this.ackLatency.lines('leadledger_serve_ack_seconds'),
      '# HELP leadledger_serve_crm_request_seconds Time of each request to the CRM, to its answer.',
      '# TYPE leadledger_serve_crm_request_seconds histogram',
      ...this.crmLatency.lines('leadledger_serve_crm_request_seconds'),
    );
    return out.join('\n') + '\n';
  }
}
