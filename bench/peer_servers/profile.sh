#!/usr/bin/env bash
# Profiles YouYou's server under the side-by-side benchmark's load (many users, streamed
# answers), to see where its CPU per turn goes.
#   bash bench/peer_servers/profile.sh [OUT_DIR] [run.py options, e.g. --users 100]
# With py-spy (on PATH, or `bash bench/peer_servers/setup.sh py-spy`): one round of run.py
# against YouYou alone, py-spy sampling every thread of the server during the many-users phase
# only; writes OUT_DIR/youyou-round1.svg (a flame graph). Without it: bench/server_load.py's
# pyinstrument profile of the same load (the event loop's thread, the turns only), as
# OUT_DIR/server-200-sqlite.txt and .html. OUT_DIR defaults to /tmp/youyou-profile.
set -euo pipefail
cd "$(dirname "$0")/../.."

OUT="${1:-/tmp/youyou-profile}"
[ $# -gt 0 ] && shift
PEERS="${YOUYOU_PEERS_DIR:-$HOME/.cache/youyou-peers}"
PYTHON=.venv/bin/python

if command -v py-spy > /dev/null || [ -x "$PEERS/tools/bin/py-spy" ]; then
  "$PYTHON" bench/peer_servers/run.py --servers youyou --rounds 1 --profile "$OUT" "$@"
elif "$PYTHON" -c "import pyinstrument" 2> /dev/null; then
  echo "py-spy not found (bash bench/peer_servers/setup.sh py-spy); profiling with pyinstrument"
  "$PYTHON" bench/server_load.py --backends sqlite --workers 1 --users 200 --turns 5 \
    --answer-s 2 --ramp 2 --profile "$OUT"
else
  echo "neither py-spy nor pyinstrument is available" >&2
  exit 1
fi
