#!/usr/bin/env bash
# Peer, scenario 1: the sqlite3 CLI. Every line of the JSONL file is imported as one TEXT value (ascii mode with
# a unit-separator column delimiter that never occurs in the data, so quotes and commas are left alone), then
# json_extract pulls event_id and EXCEPT (a distinct anti-join) removes what the ledger's events table holds.
# The work database is in memory; the ledger is attached read-only.
# usage: sqlite3-jsonl.sh <events.jsonl> <ledger.db>   → prints the number of new unique event ids
set -euo pipefail
events=$1 ledger=$2
sqlite3 <<SQL
ATTACH 'file:${ledger}?mode=ro' AS l;
CREATE TABLE t(line TEXT);
.mode ascii
.separator "\\037" "\\n"
.import '${events}' t
.mode list
SELECT count(*) FROM (SELECT json_extract(line, '\$.event_id') FROM t EXCEPT SELECT key FROM l.events);
SQL
