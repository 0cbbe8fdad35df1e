#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# What mmproxy-bpf's BPF programs cost per run in the field: runs a command
# (a benchmark) with the kernel's BPF run statistics on
# (kernel.bpf_stats_enabled), samples every mmp_* program's run count and
# run time while it runs, and prints one line per program instance:
#
#   bench/prog_cost.sh -- bench/run.sh --rounds 5 -T 3 --engines tc --scenarios pp50 \
#       --configs mmproxy-bpf/tc,mmproxy-bpf-base/tc
#
# Each round of a benchmark loads its own instance, so the lines come in the
# order of the rounds (A B A B ... for the command above). The figure is the
# program's time per run including the helpers it calls, with the caches as
# the rest of the machine left them: tc_cost measures the same program hot,
# in a loop (docs/benchmarks.md). The statistics add two clock reads per run
# of every program on the host while they are on; the previous setting is
# restored on exit.
set -euo pipefail

PERIOD=${PROG_COST_PERIOD:-0.3}
die() { printf 'prog_cost.sh: %s\n' "$*" >&2; exit 1; }

[[ ${1:-} == -- ]] && shift
(($#)) || die "usage: bench/prog_cost.sh -- COMMAND [ARGS...]"
[[ $(id -u) -eq 0 ]] || die "needs root (kernel.bpf_stats_enabled, bpftool): sudo bench/prog_cost.sh -- $*"
for t in bpftool jq; do
	command -v "$t" >/dev/null || die "$t missing (scripts/deps.sh installs it)"
done

PREV=$(sysctl -n kernel.bpf_stats_enabled)
SAMPLES=$(mktemp /tmp/prog_cost.XXXXXX)
SAMPLER=
# shellcheck disable=SC2317 # run by the EXIT trap
stop_sampler() {
	if [[ -n $SAMPLER ]]; then
		kill "$SAMPLER" 2>/dev/null || true
		SAMPLER=
	fi
}
# shellcheck disable=SC2317
cleanup() {
	stop_sampler
	sysctl -qw kernel.bpf_stats_enabled="$PREV"
	rm -f "$SAMPLES"
}
trap cleanup EXIT
sysctl -qw kernel.bpf_stats_enabled=1

# One line per program per sample: id name run_cnt run_time_ns. The last
# sample of an id is its total: a program's counters only grow.
(
	while :; do
		bpftool -j prog show 2>/dev/null |
			jq -r '.[] | select(.name | startswith("mmp_")) | "\(.id) \(.name) \(.run_cnt // 0) \(.run_time_ns // 0)"' \
				>>"$SAMPLES" || true
		sleep "$PERIOD"
	done
) &
SAMPLER=$!

status=0
"$@" || status=$?

stop_sampler
printf '%-8s %-20s %12s %10s\n' id program runs ns/run
awk '{ name[$1] = $2; runs[$1] = $3; ns[$1] = $4 }
	END { for (id in runs) if (runs[id] > 0) printf "%-8s %-20s %12d %10.1f\n", id, name[id], runs[id], ns[id] / runs[id] }' \
	"$SAMPLES" | sort -n
exit "$status"
