// The per-record report as one self-contained HTML page (--report audit.html): the counts by decision and by source,
// a timeline of the events, the reasons grouped, the conflicts with their field diffs and a searchable table of the
// records. It loads nothing from the network. The inputs are untrusted: every text goes into the page escaped (HTML
// text, or JSON that cannot close its script block), and the page's script puts values in with textContent only.
//
// The page is written as the run goes: the records, in JSON blocks of a thousand, as they are decided; the summary,
// made of counts and a bounded number of examples, when the run ends (the style puts it first). Nothing holds the
// whole page, or all the records, at any time.
import { DECISION_KINDS, type Decision, type DecisionKind } from '../decide/types.js';
import type { Lead } from '../mapping/types.js';
import { HTML_CSP, HTML_SCRIPT, HTML_STYLE } from './html-assets.js';
import type { ReportRow } from './report-file.js';
import type { RunReport } from './run-report.js';

/** Records per JSON block of the page. */
const BLOCK = 1000;
/** Reason groups kept apart; past these, a decision's other reasons share one group. */
const MAX_GROUPS = 500;
/** Records listed under a reason group (the table shows them all: the group's link filters it). */
const GROUP_EXAMPLES = 20;
/** Conflicts shown with their field diffs (the table lists them all). */
const MAX_CONFLICTS = 1000;
/** Bars of the timeline. */
const BINS = 48;

/** HTML-escapes a text for an element's content or a quoted attribute. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON for a <script type="application/json"> block: no `<`, `>` or `&` that could close it or open a comment. */
export function scriptJson(v: unknown): string {
  return JSON.stringify(v).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The group of a reason: the reason with what names one record (a line, a run, an event key, a quoted value) left
 * out, so that "same event as a.jsonl line 3" and "... line 9" count together.
 */
export function reasonGroup(reason: string): string {
  return reason
    .replace(/^(same (?:event|person) as ).*$/, '$1…')
    .replace(/^(same key as ).*?( with different )/, '$1…$2')
    .replace(/(by event ).*$/, '$1…')
    .replace(/'[^']*'/g, "'…'")
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\d+/g, '…');
}

interface Example {
  source: string;
  line: number;
  item: number | '';
  key: string;
  email: string;
}

interface Group {
  id: number;
  decision: DecisionKind;
  label: string;
  count: number;
  examples: Example[];
}

interface Conflict extends Example {
  reason: string;
  /** field, the value held (ledger or earlier event), the value of this event. */
  diffs: Array<[string, string, string]>;
}

function leadValue(lead: Lead | undefined, field: string): string {
  if (!lead) return '';
  if (field.startsWith('custom.')) return lead.custom?.[field.slice(7)] ?? '';
  const v = (lead as Record<string, unknown>)[field];
  return v === undefined || v === null ? '' : String(v);
}

/** The HTML page of a run's records, written through `out` as they come (see the top of this file). */
export class HtmlReport {
  private block: string[] = [];
  private readonly sources = new Map<string, number>();
  private readonly groups = new Map<string, Group>();
  private readonly counts = new Map<DecisionKind, number>();
  private readonly conflicts: Conflict[] = [];
  private conflictCount = 0;
  // Event times (ms) and their decisions (DECISION_KINDS index), for the timeline: 9 bytes a record.
  private times = new Float64Array(4096);
  private timeKinds = new Uint8Array(4096);
  private timed = 0;
  private rows = 0;

  constructor(private readonly out: (text: string) => void) {}

  /** Writes the page up to the table of records. */
  begin(): void {
    this.out(
      `<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n` +
        `<meta http-equiv="Content-Security-Policy" content="${escapeHtml(HTML_CSP)}">\n` +
        `<meta name="referrer" content="no-referrer"><meta name="viewport" content="width=device-width, initial-scale=1">\n` +
        `<title>leadledger audit</title>\n<style>${HTML_STYLE}</style></head>\n<body><div class="page">\n` +
        `<header><h1>leadledger audit</h1></header>\n` +
        `<section id="records" class="card"><h2>Records</h2>\n` +
        `<div class="tools"><input id="ll-q" type="search" autocomplete="off" aria-label="Search the records" ` +
        `placeholder="Search email, key, decision, source or reason (decision:conflict matches one decision)">` +
        `<span id="ll-matches" class="muted"></span><button id="ll-prev" type="button">‹ Prev</button>` +
        `<span id="ll-page" class="muted"></span><button id="ll-next" type="button">Next ›</button></div>\n` +
        `<noscript><p>The table of records needs JavaScript; the summary above does not.</p></noscript>\n` +
        `<table class="recs"><thead><tr><th>Source</th><th class="n">Line</th><th>Key</th><th>Email</th>` +
        `<th>Decision</th><th>Reason</th><th>Result</th><th>CRM id</th><th>Warnings</th></tr></thead>` +
        `<tbody id="ll-tbody"></tbody></table>\n`,
    );
  }

  /** Adds one record: its row, and its decision for the event time and a conflict's field values. */
  add(row: ReportRow, d?: Decision): void {
    this.rows++;
    const kind = (DECISION_KINDS as readonly string[]).includes(row.decision)
      ? (row.decision as DecisionKind)
      : 'invalid';
    const kindIndex = DECISION_KINDS.indexOf(kind);
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
    let source = this.sources.get(row.source);
    if (source === undefined) this.sources.set(row.source, (source = this.sources.size));
    const example = { source: row.source, line: row.line, item: row.item, key: row.key, email: row.email };

    const label = reasonGroup(row.reason);
    let gkey = `${kind}\u0000${label}`;
    let group = this.groups.get(gkey);
    if (!group && this.groups.size >= MAX_GROUPS) {
      gkey = `${kind}\u0000`;
      group = this.groups.get(gkey);
    }
    if (!group) {
      const shown = this.groups.size >= MAX_GROUPS ? '(other reasons)' : label;
      group = { id: this.groups.size, decision: kind, label: shown, count: 0, examples: [] };
      this.groups.set(gkey, group);
    }
    group.count++;
    if (group.examples.length < GROUP_EXAMPLES) group.examples.push(example);

    if (kind === 'conflict') {
      this.conflictCount++;
      if (this.conflicts.length < MAX_CONFLICTS) {
        const lead = d?.event?.lead;
        const diffs = (d?.fields ?? []).map((f): [string, string, string] => [
          f,
          leadValue(d?.held, f),
          leadValue(lead, f),
        ]);
        this.conflicts.push({ ...example, reason: row.reason, diffs });
      }
    }

    const at = d?.event?.occurredAt;
    const ms = at ? Date.parse(at) : NaN;
    if (Number.isFinite(ms)) {
      if (this.timed === this.times.length) {
        const t = new Float64Array(this.times.length * 2);
        t.set(this.times);
        this.times = t;
        const k = new Uint8Array(this.timeKinds.length * 2);
        k.set(this.timeKinds);
        this.timeKinds = k;
      }
      this.times[this.timed] = ms;
      this.timeKinds[this.timed++] = kindIndex;
    }

    this.block.push(
      scriptJson([
        source,
        row.line,
        row.item,
        row.key,
        row.email,
        kindIndex,
        row.reason,
        row.result,
        row.crm_id,
        row.warnings,
        group.id,
      ]),
    );
    if (this.block.length >= BLOCK) this.flushBlock();
  }

  private flushBlock(): void {
    if (this.block.length === 0) return;
    this.out(`<script type="application/json" class="ll-rows">[${this.block.join(',')}]</script>\n`);
    this.block = [];
  }

  /** Writes the rest of the page: the summary (from the run's report, where given) and the script. */
  finish(run?: RunReport): void {
    this.flushBlock();
    this.out('</section>\n<section class="summary">\n');
    this.out(this.runCard(run));
    this.out(`<div class="grid">${this.countsCard(run)}${this.deliveryCard(run)}</div>\n`);
    this.out(this.sourcesCard(run));
    this.out(this.timelineCard());
    this.out(this.reasonsCard());
    this.out(this.conflictsCard());
    this.out('</section>\n');
    const meta = { decisions: DECISION_KINDS, sources: [...this.sources.keys()] };
    this.out(`<script type="application/json" id="ll-meta">${scriptJson(meta)}</script>\n`);
    this.out(`<script>${HTML_SCRIPT}</script>\n</div></body></html>\n`);
  }

  private runCard(run: RunReport | undefined): string {
    if (!run) return '';
    const item = (k: string, v: string | undefined) =>
      v === undefined || v === '' ? '' : `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`;
    const title = `leadledger ${run.command}`;
    return (
      `<section class="card run" id="run"><h2>${escapeHtml(title)}` +
      (run.dryRun ? '<span class="badge">dry run</span>' : '') +
      (run.interrupted ? '<span class="badge">interrupted</span>' : '') +
      `</h2><dl>` +
      item('started', run.startedAt) +
      item('inputs', run.inputs.join(', ')) +
      item('ledger', run.ledger) +
      item('sink', run.sink) +
      item('run', run.runId === undefined ? undefined : String(run.runId)) +
      item('records read', String(run.counts.read)) +
      item('exit code', String(run.exitCode)) +
      `</dl></section>\n`
    );
  }

  private countsCard(run: RunReport | undefined): string {
    const count = (k: DecisionKind) => (run ? run.counts[k] : (this.counts.get(k) ?? 0));
    const read = run ? run.counts.read : this.rows;
    let rows = '';
    for (const k of DECISION_KINDS) {
      const n = count(k);
      const share = read ? `${((100 * n) / read).toFixed(1)}%` : '';
      rows +=
        `<tr data-decision="${k}"><td><span class="sw d-${k}"></span>${k}</td>` +
        `<td class="n" data-count="${n}">${n}</td><td class="n muted">${share}</td></tr>`;
    }
    rows += `<tr data-decision="read"><td>records read</td><td class="n" data-count="${read}">${read}</td><td></td></tr>`;
    return (
      `<section class="card" id="counts"><h2>By decision</h2><table><thead><tr><th>Decision</th>` +
      `<th class="n">Records</th><th class="n">Share</th></tr></thead><tbody>${rows}</tbody></table></section>`
    );
  }

  private deliveryCard(run: RunReport | undefined): string {
    if (!run?.delivery) return '';
    let rows = '';
    for (const [k, v] of Object.entries(run.delivery))
      rows += `<tr data-delivery="${escapeHtml(k)}"><td>${escapeHtml(k)}</td><td class="n" data-count="${v}">${v}</td></tr>`;
    let failures = '';
    for (const [reason, n] of Object.entries(run.failures ?? {})) failures += `<li>${escapeHtml(reason)}: ${n}</li>`;
    return (
      `<section class="card" id="delivery"><h2>Sends</h2><table><tbody>${rows}</tbody></table>` +
      (failures ? `<h2>Failures</h2><ul>${failures}</ul>` : '') +
      `</section>`
    );
  }

  private sourcesCard(run: RunReport | undefined): string {
    const per = run?.perSource;
    if (!per || Object.keys(per).length === 0) return '';
    const head = DECISION_KINDS.map((k) => `<th class="n"><span class="sw d-${k}"></span>${k}</th>`).join('');
    let rows = '';
    for (const [source, c] of Object.entries(per)) {
      rows +=
        `<tr data-source="${escapeHtml(source)}"><td>${escapeHtml(source)}</td>` +
        `<td class="n" data-count="${c.read}">${c.read}</td>` +
        DECISION_KINDS.map((k) => `<td class="n" data-decision="${k}" data-count="${c[k]}">${c[k]}</td>`).join('') +
        `</tr>`;
    }
    return (
      `<section class="card" id="sources"><h2>By source</h2><table><thead><tr><th>Source</th>` +
      `<th class="n">Read</th>${head}</tr></thead><tbody>${rows}</tbody></table></section>\n`
    );
  }

  private timelineCard(): string {
    const n = this.timed;
    const untimed = this.rows - n;
    const note = untimed > 0 ? `<p class="muted">${untimed} records have no event time.</p>` : '';
    if (n === 0)
      return `<section class="card" id="timeline"><h2>Timeline</h2><p class="muted">No record has an event time.</p></section>\n`;
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < n; i++) {
      const t = this.times[i]!;
      if (t < min) min = t;
      if (t > max) max = t;
    }
    const bins = max > min ? BINS : 1;
    const span = max - min || 1;
    const kinds = DECISION_KINDS.length;
    const tally = new Uint32Array(bins * kinds);
    for (let i = 0; i < n; i++) {
      const b = Math.min(bins - 1, Math.floor(((this.times[i]! - min) / span) * bins));
      tally[b * kinds + this.timeKinds[i]!]!++;
    }
    let peak = 0;
    for (let b = 0; b < bins; b++) {
      let total = 0;
      for (let k = 0; k < kinds; k++) total += tally[b * kinds + k]!;
      peak = Math.max(peak, total);
    }
    const W = 960;
    const H = 180;
    const top = 14;
    const bottom = 22;
    const plot = H - top - bottom;
    const bw = W / bins;
    let bars = '';
    for (let b = 0; b < bins; b++) {
      const from = new Date(min + (span * b) / bins).toISOString();
      const to = new Date(min + (span * (b + 1)) / bins).toISOString();
      let y = top + plot;
      let rects = '';
      const parts: string[] = [];
      let total = 0;
      for (let k = 0; k < kinds; k++) {
        const c = tally[b * kinds + k]!;
        if (!c) continue;
        total += c;
        parts.push(`${DECISION_KINDS[k]} ${c}`);
        const h = (c / peak) * plot;
        y -= h;
        rects += `<rect x="${(b * bw + 1).toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(1, bw - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLOURS[DECISION_KINDS[k]!]}"/>`;
      }
      if (!total) continue;
      const when = bins === 1 ? from : `${from} – ${to}`;
      bars += `<g><title>${escapeHtml(`${when}: ${total} events (${parts.join(', ')})`)}</title>${rects}</g>`;
    }
    const legend = DECISION_KINDS.map((k) => `<span><span class="sw d-${k}"></span>${k}</span>`).join('');
    return (
      `<section class="card" id="timeline"><h2>Timeline</h2>` +
      `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="100%" role="img" data-events="${n}" ` +
      `aria-label="events over their event time, by decision">` +
      `<text x="0" y="10">${peak} events in the tallest bar</text>` +
      `<line x1="0" y1="${top + plot + 0.5}" x2="${W}" y2="${top + plot + 0.5}" stroke="#d9dde3"/>${bars}` +
      `<text x="0" y="${H - 6}">${escapeHtml(new Date(min).toISOString())}</text>` +
      `<text x="${W}" y="${H - 6}" text-anchor="end">${escapeHtml(new Date(max).toISOString())}</text></svg>` +
      `<div class="legend">${legend}</div>${note}</section>\n`
    );
  }

  private reasonsCard(): string {
    const groups = [...this.groups.values()].sort((a, b) => b.count - a.count || a.id - b.id);
    let out = '';
    for (const g of groups) {
      const list = g.examples.map((e) => `<li>${escapeHtml(describe(e))}</li>`).join('');
      const more = g.count > g.examples.length ? `<li class="muted">and ${g.count - g.examples.length} more</li>` : '';
      out +=
        `<details data-decision="${g.decision}" data-count="${g.count}"><summary><span class="sw d-${g.decision}"></span>` +
        `${g.decision}: ${escapeHtml(g.label)}<span class="n">${g.count}</span></summary>` +
        `<ul>${list}${more}</ul><a href="#q=group:${g.id}">show them in the table</a></details>`;
    }
    return `<section class="card" id="reasons"><h2>Reasons</h2>${out || '<p class="muted">No records.</p>'}</section>\n`;
  }

  private conflictsCard(): string {
    if (this.conflictCount === 0) return '';
    let out = '';
    for (const c of this.conflicts) {
      const rows = c.diffs
        .map(
          ([f, was, now]) =>
            `<tr><td>${escapeHtml(f)}</td><td class="old">${escapeHtml(was)}</td><td class="new">${escapeHtml(now)}</td></tr>`,
        )
        .join('');
      const table = rows
        ? `<table class="diff"><thead><tr><th>Field</th><th>Held (ledger or earlier event)</th><th>This event</th></tr></thead><tbody>${rows}</tbody></table>`
        : '';
      out += `<div class="conflict"><h3>${escapeHtml(describe(c))}</h3><p class="muted">${escapeHtml(c.reason)}</p>${table}</div>`;
    }
    const rest =
      this.conflictCount > this.conflicts.length
        ? `<p class="muted">The first ${this.conflicts.length} of ${this.conflictCount} conflicts; the table lists them all (search decision:conflict).</p>`
        : '';
    return `<section class="card" id="conflicts" data-count="${this.conflictCount}"><h2>Conflicts</h2>${out}${rest}</section>\n`;
  }
}

const COLOURS: Record<DecisionKind, string> = {
  new: '#2e7d32',
  duplicate: '#78909c',
  duplicate_in_input: '#b0bec5',
  conflict: '#c62828',
  known_lead: '#1565c0',
  invalid: '#ef6c00',
  filtered: '#8e24aa',
};

function describe(e: Example): string {
  const at = `${e.source} line ${e.line}${e.item === '' ? '' : ` (event ${e.item})`}`;
  return [at, e.key && `key ${e.key}`, e.email].filter(Boolean).join(' · ');
}
