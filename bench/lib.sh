# shellcheck shell=bash
# bench/lib.sh: process and namespace helpers shared by the benchmark
# scripts (run.sh, scale.sh, field.sh, bridged.sh). Source it after BENCH_DIR is set.

# engine_flags ENGINE: mmproxy-bpf's flags for a configuration's engine
# name: an engine (auto, tc, splice, sockmap), or splice-lifted, the splice
# engine with --lift-pipe-limits (1 MiB relay pipes, as the peers have when
# they run with CAP_SYS_RESOURCE; docs/DESIGN.md §3d).
engine_flags() {
	case $1 in
	splice-lifted) echo "--engine splice --lift-pipe-limits" ;;
	*) echo "--engine $1" ;;
	esac
}

# in_ns NS CMD...: run CMD in network namespace NS (nsenter execs it, so a
# backgrounded call's $! is CMD's own PID).
in_ns() { nsenter --net="/run/netns/$1" "${@:2}"; }

# wait_listen NS PROTO PORT PID [SECONDS]: until something listens on PORT
# (tcp or udp) in NS, up to SECONDS (5); 1 at once when PID died meanwhile.
wait_listen() {
	local ns=$1 proto=$2 port=$3 pid=$4 i flag=-Hltn
	[[ $proto == udp ]] && flag=-Hlun
	for ((i = 0; i < ${5:-5} * 50; i++)); do
		[[ -n $(in_ns "$ns" ss $flag "sport = :$port" 2>/dev/null) ]] && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}

# stop_pid PID [TENTHS]: SIGTERM, then SIGKILL after TENTHS tenths of a
# second (default 50) if it still runs; reaped either way. A PID that is
# already gone is fine.
stop_pid() {
	local pid=$1 tenths=${2:-50} i
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < tenths; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# ns_del NS...: stop whatever still runs in each of our namespaces (a safety
# net: anything in them is ours), then delete them. Missing ones are fine.
ns_del() {
	local ns pid
	for ns in "$@"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do stop_pid "$pid"; done
		ip netns del "$ns" 2>/dev/null || true
	done
}

# background_busy_cpus: how many CPUs other work kept busy over 2 s, before a
# run starts (other tenants skew every number), e.g. "0.35".
background_busy_cpus() {
	local busy0 total0 busy1 total1
	read -r busy0 total0 < <(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
	sleep 2
	read -r busy1 total1 < <(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
	awk -v b=$((busy1 - busy0)) -v t=$((total1 - total0)) -v n="$(nproc)" \
		'BEGIN { printf "%.2f", t ? b / t * n : 0 }'
}
