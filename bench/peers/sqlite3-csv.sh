#!/usr/bin/env bash
# Peer, scenario 2: the sqlite3 CLI on the CSV export. `.import --csv` creates the table from the header row, then
# EXCEPT (a distinct anti-join) removes the event ids the ledger's events table holds. In-memory work database,
# ledger attached read-only.
# usage: sqlite3-csv.sh <events.csv> <ledger.db>   → prints the number of new unique event ids
set -euo pipefail
events=$1 ledger=$2
sqlite3 <<SQL
ATTACH 'file:${ledger}?mode=ro' AS l;
.import --csv '${events}' t
SELECT count(*) FROM (SELECT event_id FROM t EXCEPT SELECT key FROM l.events);
SQL
