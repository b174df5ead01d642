#!/usr/bin/env bash
# The reliability report. Each suite keeps its counts in target/tmp/reliability/*.txt as it
# runs (tests/faults.rs, kills.rs, concurrent_pi.rs, disk_full.rs, hostile.rs, shared_state.rs,
# fuzz_regressions.rs, resume.rs; scripts/fuzz.sh); this
# script writes them into RELIABILITY.md.
#   scripts/reliability.sh            run those suites and fuzz each target 10 minutes, then write
#   scripts/reliability.sh --fuzz S   the same with S seconds of fuzzing per target
#   scripts/reliability.sh --write    only write RELIABILITY.md from the last run's counts
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/tmp/reliability
fuzz=600
case "${1:-}" in
  --write) fuzz= ;;
  --fuzz) fuzz=${2:?seconds} ;;
  "") ;;
  *) echo "usage: scripts/reliability.sh [--fuzz SECONDS | --write]" >&2; exit 2 ;;
esac
if [ -n "$fuzz" ]; then
  rm -rf "$dir"
  BONSAI_REQUIRE_ORACLE=${BONSAI_REQUIRE_ORACLE:-1} cargo test --locked --test faults --test kills --test concurrent_pi --test disk_full --test hostile --test shared_state --test fuzz_regressions --test resume
  ./scripts/fuzz.sh "$fuzz"
fi
[ -d "$dir" ] || { echo "no counts in $dir: run the tests first" >&2; exit 1; }
row() { # name file
  if [ -f "$dir/$2.txt" ]; then echo "| $1 | $(cat "$dir/$2.txt") |"; else echo "| $1 | not run |"; fi
}
{
  echo "# Reliability"
  echo
  echo "What the fault suite did on its last full run, written by \`scripts/reliability.sh\` from the"
  echo "counts each suite keeps as it runs (the README's test command runs all of them, fuzzing 60 s"
  echo "per target). A failure in any row fails the test run. See the test files for what each checks."
  echo
  echo "Run: $(date -u +%Y-%m-%d) · commit $(git rev-parse --short HEAD 2>/dev/null || echo ?) · $(nproc) cores · $(uname -sr)"
  echo
  echo "| suite | counts |"
  echo "|---|---|"
  row "Injected faults (tests/faults.rs): short write, EINTR, ENOSPC, EIO, failed fsync, crash at every step of every write path" faults
  row "Injected faults in the one rewrite (tests/faults.rs): delete-branch and restore, every step, every fault" faults-delete
  row "Real kills (tests/kills.rs): SIGKILL of the real binary at random and as the file grows, small and 50 MB sessions" kills
  row "A real concurrent writer (tests/concurrent_pi.rs): Pi's SessionManager appending while bonsai writes" concurrent
  row "Disk full for real (tests/disk_full.rs): a nearly full tmpfs" disk-full
  row "Hostile side files (tests/hostile.rs): links, FIFOs and devices planted where bonsai writes or reads its own files" side-files
  row "Slow appenders (tests/hostile.rs): a writer holding the old file open across delete-branch and restore" slow-appenders
  row "Escape payloads (tests/hostile.rs): OSC 52, title, clear, C1 and DCS in a session's text and names through every reading command" escapes
  row "Escapes in a real terminal (tests/resume.rs): tmux acts on what it is sent" terminal
  row "Names on one line (tests/hostile.rs): line breaks, bidi and zero-width characters in names, folders and file names through the listing commands" one-line
  row "Modes and owners (tests/hostile.rs): files made from a 0600 session under umask 022 (owners as root)" modes
  row "Stale index (tests/fuzz_regressions.rs): sessions edited in place at their size and time, some grown, read through their index" stale-index
  row "Shared records (tests/shared_state.rs): trash, restore and empty from many processes at once" shared-records
  row "Held files (tests/shared_state.rs): a session Pi or another process may still write" held-files
  row "Hostile own files (tests/shared_state.rs): tampered records and linked folders of bonsai's own" hostile-own-files
  row "Records that outlive their files (tests/housekeeping.rs): freed inodes and tampered made-files records" outlived-records
  row "FIFOs where configuration is read (tests/shared_state.rs)" fifos
  row "Fuzzing the loader (scripts/fuzz.sh load)" fuzz-load
  row "Fuzzing the /tree view (scripts/fuzz.sh tree)" fuzz-tree
  row "Fuzzing the exporter (scripts/fuzz.sh export): hostile text on odd trees, Markdown, HTML and JSON" fuzz-export
  row "Fuzzing the search decoder (scripts/fuzz.sh search)" fuzz-search
  row "Fuzzing the index against edits in place (scripts/fuzz.sh index)" fuzz-index
  row "The live engine against a replay (tests/fuzz_regressions.rs): jumps back past its history, restarts, cold caches" live-replay
  row "Fuzzing the live engine against a replay (scripts/fuzz.sh live)" fuzz-live
} > RELIABILITY.md.new
if [ -f RELIABILITY.md ] && grep -q '^## ' RELIABILITY.md; then
  # Keep the hand-written sections below the table (long runs, what was found).
  sed -n '/^## /,$p' RELIABILITY.md | { echo; cat; } >> RELIABILITY.md.new
fi
mv RELIABILITY.md.new RELIABILITY.md
echo "wrote RELIABILITY.md:"
sed -n '/^| suite/,/^$/p' RELIABILITY.md
