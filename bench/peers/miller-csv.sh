#!/usr/bin/env bash
# Peer, scenario 2: Miller on the CSV export: `mlr --icsv cut -f event_id`, then sort -u | comm -23 against the
# ledger's ids (C-sorted text, prepared once, not timed).
# usage: miller-csv.sh <events.csv> <ledger-ids.sorted.txt>   → prints the number of new unique event ids
set -euo pipefail
export LC_ALL=C
mlr --icsv --onidx cut -f event_id "$1" | sort -u | comm -23 - "$2" | wc -l
