#!/usr/bin/env bash
# Installs the peer servers of the side-by-side server benchmark, each into its own virtual
# environment under $YOUYOU_PEERS_DIR (default ~/.cache/youyou-peers), outside the repository:
#   open-webui/  Open WebUI 0.12.x
#   langgraph/   the LangGraph Agent Server (langgraph-cli[inmem]) and langchain-openai
#   tools/       py-spy, for profile.sh (only when asked: setup.sh py-spy)
# The project's own install and CI never run this; the benchmark is run by hand.
# Usage: bash bench/peer_servers/setup.sh [open-webui] [langgraph] [py-spy]
#        (default: open-webui and langgraph)
set -euo pipefail

PEERS="${YOUYOU_PEERS_DIR:-$HOME/.cache/youyou-peers}"
PYTHON="${PYTHON:-python3.11}"
mkdir -p "$PEERS"

install() {  # install NAME REQUIREMENT...
  local venv="$PEERS/$1"
  shift
  if [ ! -x "$venv/bin/python" ]; then
    "$PYTHON" -m venv "$venv"
  fi
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q "$@"
  "$venv/bin/pip" freeze > "$venv/installed.txt"
  echo "installed into $venv (versions in $venv/installed.txt)"
}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(open-webui langgraph)
for target in "${targets[@]}"; do
  case "$target" in
    open-webui) install open-webui 'open-webui>=0.12,<0.13' ;;
    langgraph) install langgraph 'langgraph-cli[inmem]' langchain-openai ;;
    py-spy) install tools py-spy ;;
    *) echo "unknown target: $target (open-webui, langgraph, py-spy)" >&2; exit 2 ;;
  esac
done
