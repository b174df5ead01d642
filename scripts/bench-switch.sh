#!/usr/bin/env bash
# Open a big session, then a small one from the picker while the big one's counts run, three
# times (a fresh bonsai each time), in tmux: how long until the small session's gauge shows its
# exact count, and what it shows 3 s later (issue 58: a left session's figure must never show).
#   scripts/bench-switch.sh BONSAI BIG.jsonl   (BIG: e.g. gen_session.py --entries 437000 …)
# The small session is the repository's fixtures/pi-0.87.1/tour.jsonl.
set -euo pipefail
BIN=$(realpath "$1"); BIG=$(realpath "$2"); S=bench-switch-$$
TOUR=$(realpath "$(dirname "$0")/../fixtures/pi-0.87.1/tour.jsonl")
H=$(mktemp -d); trap 'tmux -L $S kill-server 2>/dev/null || true; rm -rf "$H"' EXIT
P=$H/proj; mkdir -p "$P"
D="$H/.pi/agent/sessions/-$(echo "$P" | tr '/' '-')--"; mkdir -p "$D"
ln "$BIG" "$D/2026-11-01T10-00-00-000Z_big.jsonl" 2>/dev/null || ln -s "$BIG" "$D/2026-11-01T10-00-00-000Z_big.jsonl"
cp "$TOUR" "$D/2026-11-02T10-00-00-000Z_tour.jsonl"
touch -d '2 minutes ago' "$D"/*
tmux -L $S new-session -d -s $S -x 160 -y 45 sh
cap() { tmux -L $S capture-pane -p -t $S; }
for round in 1 2 3; do
  tmux -L $S send-keys -t $S "clear; cd '$P' && HOME='$H' '$BIN' '$D/2026-11-01T10-00-00-000Z_big.jsonl'; echo EXITED" Enter
  for _ in $(seq 600); do cap | grep -q "(Pi's figure)" && break; sleep 0.05; done
  tmux -L $S send-keys -t $S o
  for _ in $(seq 100); do cap | grep -q "ledger: fix rounding" && break; sleep 0.05; done
  for _ in 1 2 3 4 5; do cap | grep "│›" | grep -q "ledger: fix rounding" && break; tmux -L $S send-keys -t $S j; sleep 0.2; done
  t0=$(date +%s.%N); tmux -L $S send-keys -t $S Enter; got=""
  for _ in $(seq 600); do
    s=$(cap); g=$(echo "$s" | grep -oE "exact [0-9,]+" | head -1 || true)
    if [ -n "$g" ] && echo "$s" | grep -q "ledger: fix rounding ("; then got=$g; break; fi
    sleep 0.02
  done
  t1=$(date +%s.%N); sleep 3
  echo "round $round: the small session shows '$got' after $(echo "$t1 - $t0" | bc) s; 3 s later '$(cap | grep -oE "exact [0-9,]+" | head -1)'"
  tmux -L $S send-keys -t $S q
  for _ in $(seq 100); do cap | grep -q EXITED && break; sleep 0.1; done
done
