#!/usr/bin/env bash
# One command for the peer comparison: installs the peers into bench/peers/.venv, runs every
# scenario for YouYou and the peers, prints the table, writes bench/peers/results/*.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec .venv/bin/python bench/peers/run.py "$@"
