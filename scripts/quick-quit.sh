#!/usr/bin/env bash
# A session opened, quit 1 s after its first frame, opened again: what the second open costs.
# Before issue 45 a quit dropped the index job, so the second open parsed the file again.
# Each run in a fresh HOME (no index yet), the viewer in a real terminal (tmux).
#
#   [RUNS=3] scripts/quick-quit.sh FILE
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=$PWD/target/release/bonsai
f=$(realpath "$1")
now_ms() { date +%s%3N; }
for _ in $(seq "${RUNS:-3}"); do
  home=$(mktemp -d)
  tmux -L quickquit kill-server 2>/dev/null || true
  tmux -L quickquit new-session -d -s q -x 120 -y 40 "sh"
  # The quotes keep the markers out of the command line tmux shows.
  tmux -L quickquit send-keys -t q "HOME=$home $bin $f; echo EXI''TED" Enter
  start=$(now_ms)
  until tmux -L quickquit capture-pane -p -t q | grep -q "tokens"; do sleep 0.02; done
  frame=$(( $(now_ms) - start ))
  sleep 1
  q=$(now_ms)
  tmux -L quickquit send-keys -t q q
  until tmux -L quickquit capture-pane -p -t q | grep -q "EXITED"; do sleep 0.02; done
  quit=$(( $(now_ms) - q ))
  tmux -L quickquit send-keys -t q "HOME=$home BONSAI_EXIT_AFTER_FIRST_FRAME=1 $bin $f 2>$home/err; echo DO''NE" Enter
  until tmux -L quickquit capture-pane -p -t q | grep -q "DONE"; do sleep 0.05; done
  tmux -L quickquit kill-server
  second=$(grep "whole first frame" "$home/err" | grep -o "[0-9.]* ms" || echo "?")
  echo "first frame ${frame} ms · quit ${quit} ms · second open's whole first frame ${second}"
  rm -rf "$home"
done
