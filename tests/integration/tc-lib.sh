# shellcheck shell=bash
# shellcheck disable=SC2034 # variables are set here for the scripts that source this
# tests/integration/tc-lib.sh: helpers for the tc-engine test files
# (t10-t15). Source it after lib.sh. Not a test file itself (run-all.sh only
# runs tNN-*.sh).
#
# The tc engine (issue 5, docs/DESIGN.md §3b) keeps per-flow state in pinned maps
# (mmp_tc_tuples, mmp_tc_flows with each flow's stats, mmp_tc_counters) and attaches
# TC filters with handle 0x4d4d and priority 0x4d4d (= pref 19789) to lo
# egress and, with --iface, to the ingress and egress of those interfaces.
# At -v 2 the proxy logs per flow one of
#   "tc engine: client X spliced in the kernel after N us (...)"
#   "tc engine: client X stays on splice: REASON"
#   "tc engine: hand-off of client X aborted (WHY): staying on splice"
# and at exit (-v 1) "totals: ... (tc N, tc ineligible N, tc aborted N,
# tc short N, ...)".

TC_PREF=19789 # MMP_TC_PRIO 0x4d4d, as `tc filter show` prints it
TC_HANDLE=0x4d4d

# tc_only ID DESCRIPTION: end the file with a SKIP line unless the binary is
# mmproxy-bpf and MMP_ENGINE is tc or auto (auto uses tc for eligible flows).
tc_only() {
	if [[ $MMP_FLAVOR != bpf || ( $MMP_ENGINE != tc && $MMP_ENGINE != auto ) ]]; then
		echo "SKIP $1 $2: tc engine only (MMP_ENGINE=$MMP_ENGINE, $MMP_FLAVOR)"
		exit 0
	fi
	for cmd in bpftool jq tc; do
		command -v "$cmd" >/dev/null || {
			echo "FAIL $1 setup: $cmd is not installed (make deps)"
			exit 1
		}
	done
	if [[ ! -x $MMP_TOOLS/mmpt-bidir ]]; then
		echo "FAIL $1 setup: $MMP_TOOLS/mmpt-bidir missing (make integration-tools)"
		exit 1
	fi
}

# tc_mmp_start PINDIR LISTEN [EXTRA ARGS...]: start mmproxy-bpf in the proxy
# namespace with an explicit pin directory (a restarted instance reuses its
# predecessor's) and extra options (--iface, --detach, --tc-idle-timeout...).
# $MMP_TC_ARGS (environment, word-split) is appended too, to try an option on
# every tc test (e.g. MMP_TC_ARGS="--tc-idle-timeout 0").
# Sets MMP_PID, MMP_LOG, MMP_PINDIR like mmp_start; MMP_START_ERR on failure.
tc_mmp_start() {
	local pindir=$1 listen=$2
	shift 2
	MMP_STARTS=$((MMP_STARTS + 1))
	MMP_DEAD_STATUS=""
	MMP_LISTEN=$listen
	MMP_PINDIR=$pindir
	MMP_CMD=("$MMP_BIN" run -l "$listen" -4 "127.0.0.1:$UP_PORT" -6 "[::1]:$UP_PORT" -v "$MMP_VERBOSITY"
		--pin-dir "$pindir" --engine "$MMP_ENGINE" --tc-handoff-delay "${MMP_TC_HANDOFF_DELAY:-0}" "$@")
	# shellcheck disable=SC2206 # word splitting wanted
	[[ -n ${MMP_TC_ARGS:-} ]] && MMP_CMD+=($MMP_TC_ARGS)
	MMP_LOG="$T_TMP/mmproxy-$MMP_STARTS.log"
	cleanup_push "rm -rf '$pindir'"
	proc_start MMP_PID "$MMP_LOG" "$TOPO_PROXY" "${MMP_CMD[@]}"
	if ! wait_port "$TOPO_PROXY" "${listen##*:}" 10 "$MMP_PID"; then
		MMP_START_ERR="proxy did not start listening on $listen: $(grep -v libbpf "$MMP_LOG" | tail -n 5 | tr '\n' ' ')"
		proc_stop "$MMP_PID" 2
		return 1
	fi
	MMP_RUNNING=1
	return 0
}

# tc_pindir TAG: a fresh pin directory name for this file.
tc_pindir() { echo "/sys/fs/bpf/mmproxy-bpf-test-$$-$1"; }

# tc_pins DIR: the pinned objects left in DIR (one per line; empty when none).
tc_pins() { find "$1" -mindepth 1 2>/dev/null; }

# tc_our_filters NS: our filters (pref 19789 / handle 0x4d4d) on every
# interface of NS, both hooks, one line each "DEV HOOK: FILTER"; empty when
# none is left.
tc_our_filters() {
	local ns=$1 dev hook
	for dev in $(ip -n "$ns" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do
		for hook in ingress egress; do
			tc -n "$ns" filter show dev "$dev" "$hook" 2>/dev/null |
				grep -E "pref $TC_PREF|handle $TC_HANDLE" | sed "s/^/$dev $hook: /"
		done
	done
}

# tc_clsact NS: interfaces of NS that have a clsact qdisc (space separated).
tc_clsact() {
	local ns=$1 dev out=""
	for dev in $(ip -n "$ns" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do
		tc -n "$ns" qdisc show dev "$dev" 2>/dev/null | grep -q clsact && out+="$dev "
	done
	echo "${out% }"
}

# tc_map_count DIR MAP: entries in a pinned map (-1 when it cannot be read).
tc_map_count() {
	local n
	n=$(bpftool -j map dump pinned "$1/$2" 2>/dev/null | jq length 2>/dev/null) || n=-1
	echo "${n:--1}"
}

# tc_counter DIR NAME: a global counter of mmp_tc_counters, summed over CPUs,
# as `mmproxy-bpf stats` prints it (packets_translated, freeze_drops...).
tc_counter() {
	"$MMP_BIN" stats --pin-dir "$1" 2>/dev/null | awk -v k="$2" '$1 == k {print $2; exit}'
}

# tc_handoff_stats LOG [MARK]: over the "spliced in the kernel after N us"
# lines after MARK, set HO_N, and HO_P50/HO_P99/HO_MAX in ms (3 decimals).
tc_handoff_stats() {
	local log=$1 mark=${2:-0} vals
	vals=$(log_since "$log" "$mark" | sed -n 's/.*spliced in the kernel after \([0-9]*\) us.*/\1/p' | sort -n)
	HO_N=$(grep -c . <<<"$vals")
	read -r HO_P50 HO_P99 HO_MAX <<<"$(awk '{a[NR] = $1} END {
		if (!NR) { print "- - -"; exit }
		i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
		printf "%.3f %.3f %.3f\n", a[i50] / 1000, a[i99] / 1000, a[NR] / 1000 }' <<<"$vals")"
}

# percentiles FILE_OR_STDIN: "p50 P p99 Q max M" of one number per line.
percentiles() {
	sort -n | awk '{a[NR] = $1} END {
		if (!NR) { print "p50 - p99 - max -"; exit }
		i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
		printf "p50 %s p99 %s max %s\n", a[i50], a[i99], a[NR] }'
}

# tc_totals [LOG]: parse the exit "totals:" line into TOT_ACCEPTED,
# TOT_SPLICED, TOT_TC, TOT_TC_INELIGIBLE, TOT_TC_ABORTED, TOT_TC_SHORT.
# Returns 1 without it.
tc_totals() {
	local line
	line=$(grep -m1 'totals: accepted' "${1:-$MMP_LOG}" 2>/dev/null) || return 1
	TOT_ACCEPTED=$(sed -n 's/.*accepted \([0-9]*\).*/\1/p' <<<"$line")
	TOT_SPLICED=$(sed -n 's/.*spliced \([0-9]*\).*/\1/p' <<<"$line")
	TOT_TC=$(sed -n 's/.*[ (]tc \([0-9][0-9]*\).*/\1/p' <<<"$line")
	TOT_TC_INELIGIBLE=$(sed -n 's/.*tc ineligible \([0-9]*\).*/\1/p' <<<"$line")
	TOT_TC_ABORTED=$(sed -n 's/.*tc aborted \([0-9]*\).*/\1/p' <<<"$line")
	TOT_TC_SHORT=$(sed -n 's/.*tc short \([0-9]*\).*/\1/p' <<<"$line")
	[[ -n $TOT_TC && -n $TOT_TC_INELIGIBLE && -n $TOT_TC_ABORTED ]]
}

# tc_wait_spliced LOG MARK CLIENT [TIMEOUT_S]: wait for the hand-off outcome
# of CLIENT ("ADDR:PORT", "[V6]:PORT") after MARK. Returns 0 when spliced in
# the kernel; otherwise 1 with TC_OUTCOME set to the last line (or "no
# outcome"). An aborted attempt may be followed by another (the proxy tries
# a flow again), so only "stays on splice" or the timeout end the wait early.
tc_wait_spliced() {
	local log=$1 mark=$2 client=$3 timeout=${4:-5} i lines line
	TC_OUTCOME="no tc engine line for client $client within $timeout s"
	for ((i = 0; i < timeout * 20; i++)); do
		lines=$(log_since "$log" "$mark" | grep 'tc engine: ' | grep -F "client $client ")
		if [[ -n $lines ]]; then
			line=$(tail -n 1 <<<"$lines")
			TC_OUTCOME=${line#*tc engine: }
			grep -q 'spliced in the kernel' <<<"$lines" && return 0
			[[ $TC_OUTCOME == *"stays on splice"* ]] && return 1
		fi
		sleep 0.05
	done
	return 1
}

# tc_outcomes LOG [MARK]: counts of the per-flow outcomes after MARK:
# OC_SPLICED, OC_STAYS, OC_ABORTED, and OC_FIRST_OTHER (the first line that
# is not "spliced", for the FAIL message).
tc_outcomes() {
	local since
	since=$(log_since "$1" "${2:-0}" | grep 'tc engine: ')
	OC_SPLICED=$(grep -c 'spliced in the kernel' <<<"$since")
	OC_STAYS=$(grep -c 'stays on splice' <<<"$since")
	OC_ABORTED=$(grep -c 'aborted (' <<<"$since")
	OC_FIRST_OTHER=$(grep -E -m1 'stays on splice|aborted \(' <<<"$since" | sed 's/.*tc engine: //')
}

# loadavg: the 1-minute load average (timings on 2 shared cores are noisy).
loadavg() { cut -d' ' -f1 /proc/loadavg; }

# TCP counters that show stalls and drops, for the whole of a namespace (every
# socket of these tests lives in the proxy namespace or the client's).
TC_NSTAT_KEYS="TcpRetransSegs TcpExtTCPFastRetrans TcpExtTCPTimeouts TcpExtTCPLossProbes TcpExtPAWSEstab TcpExtPAWSOldAck TcpExtTCPACKSkippedPAWS TcpExtTCPWinProbe TcpExtTCPZeroWindowDrop"

# tc_nstat NS VAR: remember the counters of NS in the associative array VAR.
tc_nstat() {
	local ns=$1 k v
	declare -gA "$2"
	local -n __a=$2
	while read -r k v _; do
		[[ " $TC_NSTAT_KEYS " == *" $k "* ]] && __a[$k]=$v
	done < <(ns_exec "$ns" nstat -asz 2>/dev/null)
}

# tc_nstat_delta NS BEFORE_VAR: the differences since tc_nstat NS BEFORE_VAR,
# in NSTAT_D[KEY] and, readable, in NSTAT_STR (call it in the test's shell,
# not in $(...)).
tc_nstat_delta() {
	local ns=$1 k out=""
	local -n __b=$2
	declare -gA NSTAT_D=()
	declare -A __now=()
	tc_nstat "$ns" __now
	for k in $TC_NSTAT_KEYS; do
		NSTAT_D[$k]=$((${__now[$k]:-0} - ${__b[$k]:-0}))
	done
	NSTAT_STR="retransmits ${NSTAT_D[TcpRetransSegs]}, fast retransmits ${NSTAT_D[TcpExtTCPFastRetrans]}, RTOs ${NSTAT_D[TcpExtTCPTimeouts]}, loss probes ${NSTAT_D[TcpExtTCPLossProbes]}, PAWS drops ${NSTAT_D[TcpExtPAWSEstab]}, old acks dropped by PAWS ${NSTAT_D[TcpExtPAWSOldAck]}, acks skipped by PAWS ${NSTAT_D[TcpExtTCPACKSkippedPAWS]}, window probes ${NSTAT_D[TcpExtTCPWinProbe]}, zero-window drops ${NSTAT_D[TcpExtTCPZeroWindowDrop]}"
}

# tc_drop_watch_start NS...: count, until tc_drop_watch_stop, what the kernel
# drops in the namespaces NS (tests/tools/mmpt-drops): by reason, and what
# PAWS drops by kind. The counters cannot tell a dropped copy or pure ACK
# from dropped data the receiver lacked; the watcher sees each drop's
# sequence range against the receiver's rcv_nxt. Without it (no kernel BTF,
# or the tool failed) tc_paws_verdict falls back to the counters.
tc_drop_watch_start() {
	local ns paths=()
	DROP_WATCH_LOG="$T_TMP/drop-watch-$$-$RANDOM.out"
	for ns; do paths+=("/run/netns/$ns"); done
	proc_start DROP_WATCH_PID "$DROP_WATCH_LOG" "$1" "$MMP_TOOLS/mmpt-drops" "${paths[@]}"
	wait_grep "$DROP_WATCH_LOG" '^ready' 5
}

# tc_drop_watch_stop: stop the watcher. DROP_WATCH is its lines on one
# ("paws ack N copy N new N; drops REASON=N...; lost REASON=N...; lost-at
# ..." for each of the first lost segments), or its
# error when it did not run; PAWS_NEW the data segments PAWS dropped with
# bytes the receiver lacked, DROP_LOST every segment dropped with such
# bytes, whatever the reason (both empty when the watcher did not run).
tc_drop_watch_stop() {
	DROP_WATCH="" PAWS_NEW="" DROP_LOST=""
	[[ -n ${DROP_WATCH_PID:-} ]] || return 0
	proc_stop "$DROP_WATCH_PID" 3
	DROP_WATCH_PID=""
	if grep -q '^paws ' "$DROP_WATCH_LOG"; then
		PAWS_NEW=$(awk '/^paws / { print $7 }' "$DROP_WATCH_LOG")
		DROP_LOST=$(awk -F'[ =]' '/^lost / { for (i = 3; i <= NF; i += 2) n += $i } END { print n + 0 }' "$DROP_WATCH_LOG")
		DROP_WATCH=$(grep -E '^(paws|drops|lost|lost-at) ' "$DROP_WATCH_LOG" | paste -sd';' | sed 's/;/; /g')
	else
		DROP_WATCH="no drop watcher, PAWS counters only: $(head -n 1 "$DROP_WATCH_LOG")"
	fi
}

# tc_paws_verdict: after tc_nstat_delta (and tc_drop_watch_stop), a failure
# reason when PAWS dropped segments that cost data, else empty. What PAWS
# drops harmlessly are stale pure ACKs (the second window update of a
# switch, landing after that peer's own translated segment: docs/DESIGN.md
# §3b, step 7) and the carrier's copies of bytes the receiver already holds.
# A data segment with bytes the receiver lacked, dropped for an old TSval,
# leaves a hole that a fast retransmit or an RTO fills, so such drops with
# either fail. All retransmits are not the test: flows that never pause send
# tail loss probes every few hand-offs whatever PAWS does (t20: 100-150 a run
# with no PAWS drop at all, and up to 5 fast retransmits), and a probe that
# happens to resend a dropped tail costs no stall. With the watcher, only
# drops of new data count; without it, every PAWS drop does.
tc_paws_verdict() {
	local paws=${NSTAT_D[TcpExtPAWSEstab]:-0} fast=${NSTAT_D[TcpExtTCPFastRetrans]:-0}
	local rtos=${NSTAT_D[TcpExtTCPTimeouts]:-0} what="segments"
	if [[ -n ${PAWS_NEW:-} ]]; then
		paws=$PAWS_NEW what="segments with bytes the receiver lacked"
	fi
	((paws > 0 && fast + rtos > 0)) || return 0
	echo "$paws $what dropped by PAWS, with $fast fast retransmits and $rtos RTOs (translated timestamps too old${DROP_WATCH:+; $DROP_WATCH})"
}

# tc_run_bidir NS OUT ARGS...: run mmpt-bidir ARGS in NS, output in OUT, and
# while it runs, for every "stall" line it prints (a connection that moved no
# byte for 2 s, still open), save what the kernel and the maps say about it
# to $T_TMP/stall-I.txt: ss -tinoe of its four sockets and its entry in
# `mmproxy-bpf stats` (MMP_PINDIR). Sets TC_STALLS (how many) and
# TC_STALL_DIAG (the first one, condensed, for a FAIL line). Returns the
# tool's exit status.
# tc_bidir_start NS OUT ARGS... + tc_bidir_wait: the same in two steps, to do
# something (a restart) while it runs; BIDIR_PID is the tool's PID.
tc_run_bidir() {
	tc_bidir_start "$@"
	tc_bidir_wait
}

# BIDIR_WRAP (an array, default empty) goes in front of the tool, e.g.
# (chrt -f 1) so that a loaded host does not stall the measuring tool (t48).
BIDIR_WRAP=()
tc_bidir_start() {
	BIDIR_NS=$1
	BIDIR_OUT=$2
	shift 2
	TC_STALLS=0
	TC_STALL_DIAG=""
	BIDIR_SEEN=0
	BIDIR_T0=$(date +%s%N)
	: >"$BIDIR_OUT"
	proc_start BIDIR_PID "$BIDIR_OUT" "$BIDIR_NS" "${BIDIR_WRAP[@]}" "$MMP_TOOLS/mmpt-bidir" "$@"
}

# tc_bidir_poll: save the diagnostics of new "stall" lines (see above).
tc_bidir_poll() {
	local line idx caddr cport lbport f
	while read -r line; do
		read -r _ idx caddr cport _ lbport _ <<<"$line"
		[[ $caddr == *:* ]] && caddr="[$caddr]"
		f="$T_TMP/stall-$idx.txt"
		{
			echo "$line"
			echo "--- at $((($(date +%s%N) - BIDIR_T0) / 1000000)) ms; ss -tinoe (namespace $BIDIR_NS): the client $caddr:$cport's sockets and the load balancer's port $lbport"
			ns_exec "$BIDIR_NS" ss -tinoe "( src $caddr:$cport or dst $caddr:$cport or sport = :$lbport or dport = :$lbport )"
			echo "--- mmproxy-bpf stats --pin-dir ${MMP_PINDIR:-?} (this flow)"
			"$MMP_BIN" stats --pin-dir "${MMP_PINDIR:-/nonexistent}" 2>&1 |
				grep -B1 -A4 -E ":$lbport -> " | head -n 8
			echo "--- tc counters"
			"$MMP_BIN" stats --pin-dir "${MMP_PINDIR:-/nonexistent}" 2>&1 | sed -n '/^tc counters/,/^tc flows/p'
		} >"$f" 2>&1
		TC_STALLS=$((TC_STALLS + 1))
		[[ -z $TC_STALL_DIAG ]] && TC_STALL_DIAG="$(head -n 1 "$f"); sockets: $(sed -n '3,12p' "$f" | tr -s ' \n' ' ' | cut -c1-700)"
	done < <(grep '^stall ' "$BIDIR_OUT" 2>/dev/null | tail -n +$((BIDIR_SEEN + 1)))
	BIDIR_SEEN=$(grep -c '^stall ' "$BIDIR_OUT" 2>/dev/null)
}

tc_bidir_wait() {
	while proc_alive "$BIDIR_PID"; do
		tc_bidir_poll
		sleep 0.2
	done
	tc_bidir_poll
	wait "$BIDIR_PID" 2>/dev/null
}

# tc_echo_case NAME LISTEN UPSTREAM_LISTEN NET PORT_BASE [PROXY ARGS...] [-- BIDIR ARGS...]:
# one case (case_begin to case_end) of ECHO_N flat-out two-way streams of
# ECHO_SIZE each way through an echo upstream (t20, t60). It starts a proxy
# (tc_mmp_start LISTEN PROXY ARGS, pins named after PORT_BASE), runs
# mmpt-bidir --echo in the proxy namespace (the load balancer connects to
# LISTEN from NET addresses and ports from PORT_BASE up, the upstream listens
# on UPSTREAM_LISTEN; --timeout ECHO_TIMEOUT, --max-failures 2, BIDIR ARGS),
# counts the namespace's TCP stalls and drops (tc_nstat_delta), stops the
# proxy. Asserted, the FAIL reasons in this order:
#   - no connection moved no byte for 2 s (tc_bidir_poll);
#   - every connection byte-exact both ways ("conn ... up N ok down N ok");
#   - what ECHO_CHECK asserts;
#   - no flow stayed on splice (-v 2 lines, tc_outcomes);
#   - with ECHO_WITHIN_S set, every flow in the kernel within ECHO_WITHIN_S s
#     of its start: MMP_TC_HANDOFF_DELAY plus the longest hand-off; and with
#     ECHO_WITHIN_S=1 and tc_echo_check_carried, tcp.tc_within_1s = ECHO_N
#     (the proxy's own count from each accept, retries included);
#   - no data segment dropped by PAWS (tc_paws_verdict);
#   - at most ECHO_MAX_RTOS (default 0) RTOs in the proxy namespace;
#   - with ECHO_NO_LOSS=1, no segment dropped with bytes its receiver lacked
#     (mmpt-drops' "lost": a link that loses nothing loses no data, so each
#     one is a segment the hand-off or the carry made unacceptable).
# Hooks, the names of the test's own functions (empty: none):
#   ECHO_WHILE  called once the streams run (BIDIR_PID), to read something
#               meanwhile; the streams are waited for after it returns;
#   ECHO_CHECK  the test's own assertions and its report (the "# ..." line,
#               case_note), called after the exactness checks with ECHO_OK
#               (connections byte-exact), ECHO_MS (the run's duration),
#               OC_* (tc_outcomes), HO_* (tc_handoff_stats) and NSTAT_D /
#               NSTAT_STR set.
# ECHO_NAME, ECHO_PORT_BASE, ECHO_OUT (the tool's output) and ECHO_MARK (the
# proxy log's size at the start) are set for the hooks too.
ECHO_TIMEOUT=60
ECHO_MAX_RTOS=0
ECHO_NO_LOSS=0
ECHO_WITHIN_S=""
ECHO_WHILE=""
ECHO_CHECK=""
tc_echo_case() {
	local listen=$2 uplisten=$3 net=$4 pbase=$5 mmp_args=() bad t0 paws rtos
	ECHO_NAME=$1
	ECHO_PORT_BASE=$pbase
	ECHO_OUT="$T_TMP/echo-$pbase.out"
	shift 5
	while (($#)) && [[ $1 != -- ]]; do
		mmp_args+=("$1")
		shift
	done
	(($#)) && shift
	case_begin "$ECHO_NAME"
	if ! tc_mmp_start "$(tc_pindir "$pbase")" "$listen" "${mmp_args[@]}"; then
		case_fail "$MMP_START_ERR"
		case_end
		return
	fi
	ECHO_MARK=$(log_mark "$MMP_LOG")
	tc_nstat "$TOPO_PROXY" NS0
	# The client's namespace too, where there is one: a remote load balancer lives there.
	if [[ -n ${TOPO_CLIENT:-} && -e /run/netns/$TOPO_CLIENT ]]; then
		tc_drop_watch_start "$TOPO_PROXY" "$TOPO_CLIENT"
	else
		tc_drop_watch_start "$TOPO_PROXY"
	fi
	t0=$(date +%s%N)
	tc_bidir_start "$TOPO_PROXY" "$ECHO_OUT" -c "$listen" -l "$uplisten" -n "$ECHO_N" --parallel "$ECHO_N" \
		--size "$ECHO_SIZE" --echo --net "$net" --port-base "$pbase" --timeout "$ECHO_TIMEOUT" --max-failures 2 "$@"
	[[ -z $ECHO_WHILE ]] || "$ECHO_WHILE"
	tc_bidir_wait
	ECHO_MS=$((($(date +%s%N) - t0) / 1000000))
	tc_nstat_delta "$TOPO_PROXY" NS0
	tc_drop_watch_stop
	tc_outcomes "$MMP_LOG" "$ECHO_MARK"
	tc_handoff_stats "$MMP_LOG" "$ECHO_MARK"

	ECHO_OK=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$ECHO_OUT")
	bad=$(grep '^conn ' "$ECHO_OUT" | grep -v ' up [0-9]* ok down [0-9]* ok$' | head -3 | tr '\n' ';')
	((TC_STALLS == 0)) || case_fail "$TC_STALLS connections moved no byte for 2 s (first: $TC_STALL_DIAG)"
	((ECHO_OK == ECHO_N)) ||
		case_fail "$ECHO_OK of $ECHO_N connections byte-exact both ways ($(tail -n 1 "$ECHO_OUT"); e.g. ${bad:-$(tail -n 2 "$ECHO_OUT" | tr '\n' ' ')})"
	[[ -z $ECHO_CHECK ]] || "$ECHO_CHECK"
	((OC_STAYS == 0)) || case_fail "$OC_STAYS flows stayed on splice (first: $OC_FIRST_OTHER)"
	if [[ -n $ECHO_WITHIN_S && $HO_MAX != - ]] &&
		awk -v m="$HO_MAX" -v d="${MMP_TC_HANDOFF_DELAY:-0}" -v w="$ECHO_WITHIN_S" 'BEGIN { exit !(m + d > w * 1000) }'; then
		case_fail "a flow reached the kernel ${MMP_TC_HANDOFF_DELAY:-0} ms + $HO_MAX ms after its start: over $ECHO_WITHIN_S s"
	fi
	paws=$(tc_paws_verdict)
	[[ -z $paws ]] || case_fail "$paws"
	if ((ECHO_NO_LOSS)) && [[ -n $DROP_LOST ]] && ((DROP_LOST > 0)); then
		case_fail "$DROP_LOST segments with bytes their receiver lacked were dropped ($DROP_WATCH)"
	fi
	# Loopback loses nothing: with ECHO_MAX_RTOS 0, an RTO is a segment the hand-off lost.
	rtos=${NSTAT_D[TcpExtTCPTimeouts]:-0}
	if ((ECHO_MAX_RTOS == 0 && rtos > 0)); then
		case_fail "$rtos RTOs: a segment was lost on loopback, and a flow stalled for 200 ms or more ($NSTAT_STR; $DROP_WATCH)"
	elif ((rtos > ECHO_MAX_RTOS)); then
		case_fail "$rtos RTOs (at most $ECHO_MAX_RTOS): segments were lost, and flows stalled for 200 ms or more ($NSTAT_STR; $DROP_WATCH)"
	fi
	mmp_stop
	case_end
}

# json_counter FILE KEY: tcp.KEY of a stats --json snapshot (empty when unreadable).
json_counter() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tcp"][sys.argv[2]])' "$1" "$2" 2>/dev/null
}

# tc_echo_watch_stats: a tc_echo_case ECHO_WHILE hook (t60, t61). Reads
# stats --json while the streams run, until every flow reaches the kernel
# (IN_KERNEL: tcp.tc_flows = ECHO_N), and sets CARRIED (tcp.tc_carried) and
# WITHIN (tcp.tc_within_1s, published in the same snapshot) from the last read.
# shellcheck disable=SC2317 # called through tc_echo_case's ECHO_WHILE
tc_echo_watch_stats() {
	local js="$T_TMP/stats-$ECHO_PORT_BASE.json" i
	IN_KERNEL=0
	for ((i = 0; i < 300; i++)); do
		ns_exec "$TOPO_PROXY" "$MMP_BIN" stats --json --pin-dir "$MMP_PINDIR" >"$js" 2>/dev/null
		IN_KERNEL=$(json_counter "$js" tc_flows)
		((${IN_KERNEL:-0} >= ECHO_N)) && break
		proc_alive "$BIDIR_PID" || break
		sleep 0.2
	done
	CARRIED=$(json_counter "$js" tc_carried)
	WITHIN=$(json_counter "$js" tc_within_1s)
}

# tc_echo_check_carried: a tc_echo_case ECHO_CHECK hook, after
# tc_echo_watch_stats (t60, t61): every flow was in the kernel while the
# streams ran, and hand-offs carried bytes; prints the counts, hand-off times
# and TCP counters.
# shellcheck disable=SC2317 # called through tc_echo_case's ECHO_CHECK
tc_echo_check_carried() {
	((${IN_KERNEL:-0} == ECHO_N)) || case_fail "stats --json: tcp.tc_flows ${IN_KERNEL:-?} of $ECHO_N while the streams ran"
	((${CARRIED:-0} > 0)) || case_fail "stats --json: tcp.tc_carried ${CARRIED:-?}: no hand-off carried bytes, so the case tested nothing new"
	# Counted by the proxy from each accept, so an aborted attempt and its retry count too (the log's hand-off times do not).
	if [[ $ECHO_WITHIN_S == 1 ]] && ((${WITHIN:-0} < ECHO_N)); then
		case_fail "stats --json: tcp.tc_within_1s ${WITHIN:-?} of $ECHO_N: a flow reached the kernel more than 1 s after its accept"
	fi
	local k shot=""
	# What the programs dropped on purpose (the watcher's tc_ingress), by cause, and what the carrier sent again.
	for k in freeze_drops frozen_socket_acks_dropped carry_acks_dropped rsts_out_of_window_dropped carry_acks_refreshed snd_nxt_raised_by_ack probe_acks_delivered tc_carry_resent tc_carry_fast_resent; do
		shot+=" $k $(tc_counter "$MMP_PINDIR" "$k"),"
	done
	echo "# $T_ID $ECHO_NAME: $IN_KERNEL of $ECHO_N in the kernel (${WITHIN:-?} within 1 s of their accept), $CARRIED hand-offs carried bytes; hand-off p50 $HO_P50 ms, p99 $HO_P99 ms, max $HO_MAX ms; $OC_ABORTED attempts aborted; $NSTAT_STR; $DROP_WATCH; tc:${shot%,}"
	case_note "$ECHO_OK/$ECHO_N exact, tc_flows $IN_KERNEL (within 1 s: ${WITHIN:-?}), carried $CARRIED, hand-off p50 $HO_P50 max $HO_MAX ms, $OC_ABORTED aborted, $ECHO_MS ms"
}

# hap_lb_start: HAProxy in LB_NS as a remote load balancer (send-proxy-v2),
# listening on LB_IP4 / [LB_IP6]:HAP_PORT and sending to the proxy at
# P_IP4 / [P_IP6]:PROXY_PORT (t13, t16 set those). HAPLB_PID is its PID.
hap_lb_start() {
	local cfg="$T_TMP/haproxy-lb.cfg"
	cat >"$cfg" <<-EOF
		global
		    maxconn 100
		defaults
		    mode tcp
		    timeout connect 5s
		    timeout client 60s
		    timeout server 60s
		frontend fe4
		    bind $LB_IP4:$HAP_PORT
		    default_backend be4
		frontend fe6
		    bind [$LB_IP6]:$HAP_PORT
		    default_backend be6
		backend be4
		    server mmp $P_IP4:$PROXY_PORT send-proxy-v2
		backend be6
		    server mmp [$P_IP6]:$PROXY_PORT send-proxy-v2
	EOF
	proc_start HAPLB_PID "$T_TMP/haproxy-lb.log" "$LB_NS" haproxy -db -f "$cfg"
	wait_port "$LB_NS" "$HAP_PORT" 10 "$HAPLB_PID"
}
