#!/usr/bin/env bash
# The bill Pi records with and without bonsai's package (tests/live_pi.rs, bill_matrix):
# real Pi 0.87.1 and 1.5.2 in RPC mode, 60 and 200 scripted turns against a fake provider on
# 127.0.0.1 that caches prompts, the model priced as Anthropic's and with no cache discount.
# Prints one BILL line per run (about 15 minutes on 2 cores). Needs scripts/install-oracle.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --locked --test live_pi bill_matrix -- --ignored --nocapture 2>&1 | grep '^BILL'
