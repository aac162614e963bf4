#!/usr/bin/env bash
# Peer, scenario 1: Miller. `mlr cut` extracts event_id from the JSONL, then sort -u | comm -23 against the ledger's
# ids (C-sorted text, prepared once, not timed). This was faster than a Miller-native
# `join --np --ur -f ledger-ids.csv then count-distinct` (14.6 s vs 8.1 s for 1M events on the bench machine).
# usage: miller-jsonl.sh <events.jsonl> <ledger-ids.sorted.txt>   → prints the number of new unique event ids
set -euo pipefail
export LC_ALL=C
mlr --ijsonl --onidx cut -f event_id "$1" | sort -u | comm -23 - "$2" | wc -l
