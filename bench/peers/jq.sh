#!/usr/bin/env bash
# Peer, scenario 1: the Unix pipeline. jq extracts event_id, sort -u dedups, comm -23 drops the ids the ledger holds
# (given as a C-sorted text file, one id a line: `sqlite3 ledger.db 'select key from events' | LC_ALL=C sort`;
# that export is prepared once and not timed).
# usage: jq.sh <events.jsonl> <ledger-ids.sorted.txt>   → prints the number of new unique event ids
set -euo pipefail
export LC_ALL=C
jq -r .event_id "$1" | sort -u | comm -23 - "$2" | wc -l
