# shellcheck shell=bash
# shellcheck disable=SC2034 # variables are set here for the scripts that source this
# tests/lib/netns.sh: network-namespace topology and process helpers, shared
# by the integration tests (tests/integration/) and the demo (scripts/demo.sh).
# Source it; it defines functions only, and changes nothing until called.
#
# Topology (topo_create PREFIX):
#
#   PREFIX-client                     PREFIX-proxy
#   veth-c 198.51.100.2/24  <------>  veth-p 198.51.100.1/24
#          2001:db8:1::2/64                  2001:db8:1::1/64
#   lo up                             lo up, + topo_transparent_routing:
#                                       ip rule from 127.0.0.1/8 iif lo table 123
#                                       ip route local 0.0.0.0/0 dev lo table 123
#                                       (and -6 with ::1/128 and ::/0)
#
# Only TEST-NET / documentation addresses and loopback are used. Nothing is
# ever configured in the root namespace: the veth pair is created directly
# inside the two namespaces.
#
# Cleanup: every helper that creates something registers its undo with
# cleanup_push; cleanup_install_trap runs them all (newest first) on EXIT,
# including after a failure, Ctrl-C or SIGTERM (e.g. from `timeout`).
#
# Processes: proc_start runs a command inside a namespace with
# `nsenter --net=/run/netns/NAME` (not `ip netns exec`, which remounts /sys in
# a new mount namespace and so hides bpffs pins, docs/DESIGN.md §3a item 9). nsenter
# execs the command, so the PID we get is the command's own PID (the one
# /proc/PID/fd is read from). Processes are stopped by PID only.

NETNS_CLEANUPS=()

# cleanup_push CMD...: register a command (one string, eval'ed) to run at exit.
cleanup_push() {
	NETNS_CLEANUPS+=("$*")
}

# cleanup_run: run the registered commands, newest first; never fails.
cleanup_run() {
	local i
	for ((i = ${#NETNS_CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${NETNS_CLEANUPS[i]}" >/dev/null 2>&1 || true
	done
	NETNS_CLEANUPS=()
}

# cleanup_install_trap: run cleanup_run however the script ends. INT/TERM are
# turned into an exit so that the EXIT trap runs exactly once.
cleanup_install_trap() {
	trap cleanup_run EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# ns_exec NS CMD...: run CMD in the network namespace NS (mounts unchanged).
ns_exec() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" -- "$@"
}

# tmpdir_create VAR [TAG]: make a private temp dir, removed at exit.
tmpdir_create() {
	local __d
	__d=$(mktemp -d "/tmp/${2:-mmpt}.XXXXXX") || return 1
	cleanup_push "rm -rf '$__d'"
	printf -v "$1" '%s' "$__d"
}

# bpffs_ensure: mount bpffs on /sys/fs/bpf when it is missing (docs/DESIGN.md §3a 9).
# It is left mounted afterwards: it is where mmproxy-bpf pins by default.
bpffs_ensure() {
	mountpoint -q /sys/fs/bpf && return 0
	mkdir -p /sys/fs/bpf
	mount -t bpf bpf /sys/fs/bpf
}

# topo_create PREFIX: create PREFIX-client and PREFIX-proxy joined by a veth
# pair. Sets TOPO_CLIENT, TOPO_PROXY and the address variables below.
TOPO_CLIENT_IP4=198.51.100.2
TOPO_PROXY_IP4=198.51.100.1
TOPO_CLIENT_IP6=2001:db8:1::2
TOPO_PROXY_IP6=2001:db8:1::1
topo_create() {
	local prefix=$1
	TOPO_CLIENT="$prefix-client"
	TOPO_PROXY="$prefix-proxy"
	# Deleting a namespace also deletes the veth end inside it (and the peer).
	cleanup_push "ip netns del '$TOPO_CLIENT'"
	cleanup_push "ip netns del '$TOPO_PROXY'"
	ip netns add "$TOPO_CLIENT" || return 1
	ip netns add "$TOPO_PROXY" || return 1
	ip -n "$TOPO_CLIENT" link set lo up || return 1
	ip -n "$TOPO_PROXY" link set lo up || return 1
	# Create the pair inside the proxy ns with its peer directly in the
	# client ns, so no interface ever exists in the root namespace.
	ip -n "$TOPO_PROXY" link add veth-p type veth peer name veth-c netns "$TOPO_CLIENT" || return 1
	ip -n "$TOPO_PROXY" addr add "$TOPO_PROXY_IP4/24" dev veth-p || return 1
	ip -n "$TOPO_CLIENT" addr add "$TOPO_CLIENT_IP4/24" dev veth-c || return 1
	# nodad: usable at once, no 1-2 s of duplicate address detection.
	ip -n "$TOPO_PROXY" addr add "$TOPO_PROXY_IP6/64" dev veth-p nodad || return 1
	ip -n "$TOPO_CLIENT" addr add "$TOPO_CLIENT_IP6/64" dev veth-c nodad || return 1
	ip -n "$TOPO_PROXY" link set veth-p up || return 1
	ip -n "$TOPO_CLIENT" link set veth-c up || return 1
}

# topo_transparent_routing NS [TABLE]: the routing a transparent proxy needs
# inside NS (docs/DESIGN.md §3a item 8). The upstream answers the spoofed client
# address from 127.0.0.1 / ::1; these rules deliver those replies locally, to
# the proxy's IP_TRANSPARENT socket. Without them the upstream's SYN-ACK is
# routed away and connect() hangs.
topo_transparent_routing() {
	local ns=$1 table=${2:-123}
	ip -n "$ns" rule add from 127.0.0.1/8 iif lo table "$table" || return 1
	ip -n "$ns" route add local 0.0.0.0/0 dev lo table "$table" || return 1
	ip -n "$ns" -6 rule add from ::1/128 iif lo table "$table" || return 1
	ip -n "$ns" -6 route add local ::/0 dev lo table "$table" || return 1
}

# proc_alive PID: true while PID runs (a zombie counts as dead).
proc_alive() {
	local st
	read -r st 2>/dev/null <"/proc/$1/stat" || return 1
	st=${st##*) } # the state follows "(comm) "
	[[ ${st%% *} != Z ]]
}

# proc_start VAR LOG NS CMD...: start CMD in namespace NS in the background,
# stdout+stderr to LOG; its PID goes to VAR. Registers a kill at exit.
# Must be called from the test's main shell (not inside $(...)), so that
# proc_stop can `wait` for the child and get its exit status.
proc_start() {
	local __var=$1 log=$2 ns=$3
	shift 3
	nsenter --net="/run/netns/$ns" -- "$@" >"$log" 2>&1 </dev/null &
	local __pid=$!
	cleanup_push "proc_kill $__pid"
	printf -v "$__var" '%s' "$__pid"
}

# proc_kill PID: stop PID if it still runs: SIGTERM, then SIGKILL after 3 s.
proc_kill() {
	local pid=$1 i
	proc_alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 30; i++)); do
		proc_alive "$pid" || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# proc_stop PID [TIMEOUT_S]: SIGTERM, wait up to TIMEOUT_S (default 5) for a
# clean exit, then SIGKILL. Sets PROC_STATUS to the exit status (128+signal
# when killed by one) and PROC_KILLED=1 when SIGKILL was needed.
proc_stop() {
	local pid=$1 timeout=${2:-5} i
	PROC_KILLED=0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < timeout * 10; i++)); do
		proc_alive "$pid" || break
		sleep 0.1
	done
	if proc_alive "$pid"; then
		PROC_KILLED=1
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	PROC_STATUS=$?
}

# wait_port NS PORT [TIMEOUT_S] [PID]: wait until a TCP socket listens on PORT
# in NS. Gives up early when PID (the process expected to listen) died.
wait_port() {
	local ns=$1 port=$2 timeout=${3:-10} pid=${4:-} i
	for ((i = 0; i < timeout * 20; i++)); do
		if [[ -n $(ns_exec "$ns" ss -Hltn "sport = :$port" 2>/dev/null) ]]; then
			return 0
		fi
		if [[ -n $pid ]] && ! proc_alive "$pid"; then
			return 1
		fi
		sleep 0.05
	done
	return 1
}

# wait_grep FILE REGEX [TIMEOUT_S]: wait until FILE has a line matching REGEX.
wait_grep() {
	local file=$1 re=$2 timeout=${3:-10} i
	for ((i = 0; i < timeout * 20; i++)); do
		grep -Eq -- "$re" "$file" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
