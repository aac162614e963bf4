// Which invalid records are records that could not be read, rather than records read whole whose data is bad. A run
// that meets one ends 3 ("a run that could not read part of its input does not exit 0"); a bad email, or no email
// and no phone, stays an invalid record of a run that ends 0.
//
// A decision carries its reason as text only (the readers' rejects and the mappers' reasons are made into invalid
// decisions word for word, by the general path and the engine alike), so the reasons are told apart here, by the
// words their makers use. test/cli/unreadable.test.ts reads an input of each kind through the CLI: a maker whose
// words change without this list fails it.

// Reasons that are the whole of what a reader says of a line or row it could not parse.
const READER = [
  /^invalid JSON: /, // read-jsonl.ts, read-json.ts: a broken JSON line, document or array element
  /^invalid CSV: /, // read-csv.ts: an error csv-parse reports for a row
  /^unterminated quoted field /, // read-csv.ts: a quote opened and never closed, to the end of the file
  /^stray quote\? /, // csv-guard.ts: a quote opened and not closed where a row should end
  /^expected \d+ columns, found \d+$/, // read-csv.ts: a row whose cells do not line up with the header
  /^--select .+?: invalid JSON: /, // select-path.ts: the event a log line wraps is broken JSON
];

// Words inside a reason (a source's definition may put its own words before them) that say the record's bytes could
// not be read as what they hold.
const WITHIN = [
  /: the logged body is not whole JSON \(/, // presets/recognize.ts: a logger cut the webhook body it logged
  /\b(email|phone): its bytes are not UTF-8 \(/, // mapping/map-record.ts: a form body's %-escaped bytes, decoded, would alter it
];

/** Whether an invalid record's reason says the record could not be read (a parse error), not that its data is bad. */
export function isUnreadable(reason: string): boolean {
  return READER.some((r) => r.test(reason)) || WITHIN.some((r) => r.test(reason));
}
