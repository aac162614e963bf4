// The style and script of the HTML audit page (html-report.ts), inline in every page: it loads nothing from the
// network. The script reads the records from the page's JSON blocks and never puts their text in markup: every value
// goes into the page through textContent, so an email that reads `<script>` stays text.
import { createHash } from 'node:crypto';

/** The page's style sheet. */
export const HTML_STYLE = `
:root{color-scheme:light;--fg:#1d2430;--muted:#5d6673;--line:#d9dde3;--bg:#f6f7f9;--card:#fff}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
.page{display:flex;flex-direction:column;gap:16px;max-width:1200px;margin:0 auto;padding:20px}
.page>header{order:-2}
.summary{order:-1;display:flex;flex-direction:column;gap:16px}
h1{font-size:22px;margin:0}
h2{font-size:17px;margin:0 0 10px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 16px;overflow-x:auto}
.muted{color:var(--muted)}
.run dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}
.run dt{color:var(--muted)}
.run dd{margin:0;overflow-wrap:anywhere}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;background:#e8eaed;font-size:12px;margin-left:6px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:16px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.03em}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:baseline}
.d-new{background:#2e7d32}.d-duplicate{background:#78909c}.d-duplicate_in_input{background:#b0bec5}
.d-conflict{background:#c62828}.d-known_lead{background:#1565c0}.d-invalid{background:#ef6c00}.d-filtered{background:#8e24aa}
tr[data-decision=read] td{font-weight:600}
details{border-bottom:1px solid var(--line);padding:4px 0}
summary{cursor:pointer}
summary .n{float:right;font-variant-numeric:tabular-nums}
details ul{margin:6px 0 6px 18px;padding:0}
.diff td.old{background:#fdecea}.diff td.new{background:#e8f5e9}
.conflict{margin:0 0 12px}
.conflict h3{font-size:14px;margin:0 0 4px;font-weight:600;overflow-wrap:anywhere}
.tools{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin-bottom:8px}
.tools input{flex:1 1 320px;padding:6px 10px;border:1px solid var(--line);border-radius:6px;font:inherit}
.tools button{padding:5px 10px;border:1px solid var(--line);border-radius:6px;background:#fff;font:inherit;cursor:pointer}
.tools button:disabled{opacity:.4;cursor:default}
table.recs td{font-size:13px;overflow-wrap:anywhere}
table.recs td.dec span{white-space:nowrap}
svg text{font:11px system-ui,sans-serif;fill:#5d6673}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin-top:6px;font-size:12px}
`;

/** The page's script: the searchable, paginated table of records. */
export const HTML_SCRIPT = `(function () {
  'use strict';
  var PAGE = 100;
  var meta = JSON.parse(document.getElementById('ll-meta').textContent);
  var rows = [];
  var blocks = document.querySelectorAll('script.ll-rows');
  for (var b = 0; b < blocks.length; b++) {
    var part = JSON.parse(blocks[b].textContent);
    for (var j = 0; j < part.length; j++) rows.push(part[j]);
    // Parsed: the block leaves the page, which then holds each record once.
    blocks[b].parentNode.removeChild(blocks[b]);
  }
  var input = document.getElementById('ll-q');
  var tbody = document.getElementById('ll-tbody');
  var matches = document.getElementById('ll-matches');
  var pageInfo = document.getElementById('ll-page');
  var prev = document.getElementById('ll-prev');
  var next = document.getElementById('ll-next');
  var hay = null;
  var found = null;
  var page = 0;

  function text(r) {
    return (r[4] + ' ' + r[3] + ' ' + meta.decisions[r[5]] + ' ' + meta.sources[r[0]] + ' ' + r[6]).toLowerCase();
  }
  function filter(q) {
    var terms = q.toLowerCase().split(/\\s+/).filter(Boolean);
    if (!terms.length) { found = null; return; }
    if (!hay) { hay = new Array(rows.length); for (var i = 0; i < rows.length; i++) hay[i] = text(rows[i]); }
    found = [];
    outer: for (var k = 0; k < rows.length; k++) {
      var r = rows[k];
      for (var t = 0; t < terms.length; t++) {
        var term = terms[t];
        if (term.indexOf('decision:') === 0) { if (meta.decisions[r[5]] !== term.slice(9)) continue outer; }
        else if (term.indexOf('group:') === 0) { if (String(r[10]) !== term.slice(6)) continue outer; }
        else if (hay[k].indexOf(term) < 0) continue outer;
      }
      found.push(k);
    }
  }
  function cell(tr, value, cls) {
    var td = document.createElement('td');
    if (cls) td.className = cls;
    td.textContent = value === undefined || value === null ? '' : String(value);
    tr.appendChild(td);
    return td;
  }
  function render() {
    var n = found ? found.length : rows.length;
    var pages = Math.max(1, Math.ceil(n / PAGE));
    if (page >= pages) page = pages - 1;
    var frag = document.createDocumentFragment();
    var end = Math.min(n, (page + 1) * PAGE);
    for (var k = page * PAGE; k < end; k++) {
      var r = rows[found ? found[k] : k];
      var tr = document.createElement('tr');
      var decision = meta.decisions[r[5]];
      tr.setAttribute('data-decision', decision);
      cell(tr, meta.sources[r[0]]);
      cell(tr, r[2] === '' ? r[1] : r[1] + '.' + r[2], 'n');
      cell(tr, r[3]);
      cell(tr, r[4]);
      var td = cell(tr, '', 'dec');
      var sw = document.createElement('span');
      sw.className = 'sw d-' + decision;
      td.appendChild(sw);
      var label = document.createElement('span');
      label.textContent = decision;
      td.appendChild(label);
      cell(tr, r[6]);
      cell(tr, r[7]);
      cell(tr, r[8]);
      cell(tr, r[9]);
      frag.appendChild(tr);
    }
    tbody.textContent = '';
    tbody.appendChild(frag);
    matches.setAttribute('data-count', String(n));
    matches.textContent = n === rows.length ? n + ' records' : n + ' of ' + rows.length + ' records';
    pageInfo.textContent = 'page ' + (page + 1) + ' of ' + pages;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }
  function search(q) { filter(q); page = 0; render(); }
  function fromHash() {
    var m = /(?:^#|&)q=([^&]*)/.exec(location.hash);
    var q = '';
    if (m) { try { q = decodeURIComponent(m[1].replace(/\\+/g, ' ')); } catch (e) { q = m[1]; } }
    input.value = q;
    search(q);
  }
  var timer = null;
  input.addEventListener('input', function () {
    clearTimeout(timer);
    timer = setTimeout(function () {
      search(input.value);
      if (history.replaceState) history.replaceState(null, '', input.value ? '#q=' + encodeURIComponent(input.value) : '#');
    }, 150);
  });
  prev.addEventListener('click', function () { page--; render(); });
  next.addEventListener('click', function () { page++; render(); });
  // A reason's link (#q=group:N) filters the table, and shows it.
  window.addEventListener('hashchange', function () { fromHash(); document.getElementById('records').scrollIntoView(); });
  fromHash();
  document.body.setAttribute('data-ready', '1');
})();
`;

/** A CSP source for an inline text: the page runs its own script and style, and no other (nor anything remote). */
function cspHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/** The page's Content-Security-Policy: nothing from the network, no script or style but the page's own. */
export const HTML_CSP = `default-src 'none'; style-src ${cspHash(HTML_STYLE)}; script-src ${cspHash(HTML_SCRIPT)}; base-uri 'none'; form-action 'none'`;
