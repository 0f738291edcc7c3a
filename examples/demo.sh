#!/usr/bin/env bash
# make demo: build the example, start it, trace two points for ~2 s.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p examples/build
gcc -g -O0 -fPIE -pie -o examples/build/demo examples/demo.c
examples/build/demo > /dev/null &
demo_pid=$!
trap 'kill $demo_pid 2>/dev/null || true' EXIT
sleep 0.3
echo "+ gs-cgen trace -p $demo_pid --duration 2 -f examples/demo.gs" >&2
.venv/bin/gs-cgen trace -p "$demo_pid" --duration 2 --output plain -f examples/demo.gs
status=$?
leftover=$(grep -c gs_ /sys/kernel/tracing/uprobe_events || true)
echo "exit status $status; uprobes left behind: ${leftover:-0}" >&2
