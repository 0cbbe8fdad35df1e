# shellcheck shell=bash
# tests/integration/udp-lib.sh: helpers shared by the UDP tests
# (t3[0-5]-udp-*.sh), on top of lib.sh. Source it instead of lib.sh.
# Run directly (run-all.sh runs every t??-*.sh), it does nothing.
#
# UDP mode has two data paths, chosen like TCP's engines: MMP_ENGINE=splice
# runs the files against the userspace relay alone (--engine splice), and
# MMP_ENGINE=tc (or auto) against the in-kernel fast path (--engine tc: the
# proxy must start with it), with lo's route_localnet and accept_local on in
# the proxy namespace so remote load balancers' datagrams take it too.
# MMP_ENGINE=sockmap prints one SKIP per file. With MMP_FLAVOR=go,
# go-mmproxy -p udp is tested where it can be: PROXY v2 on every datagram;
# the rest is SKIP.
#
# Topology (lib.sh): the load balancer is mmpt-udp send in the client
# namespace (198.51.100.2, 2001:db8:1::2); mmproxy listens on [::]:7000 in the
# proxy namespace (dual stack: replies must leave from the address each load
# balancer sent to); upstreams are mmpt-udp echo on 127.0.0.1:9000 and
# [::1]:9000, which print "peer ADDR PORT" for each new source.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	exit 0
fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

UDP_TOOL=$MMP_TOOLS/mmpt-udp
PROXY4="$TOPO_PROXY_IP4:$PROXY_PORT"
PROXY6="[$TOPO_PROXY_IP6]:$PROXY_PORT"

# udp_setup ID: lib.sh's t_setup, plus the UDP tool. Exits with one SKIP line
# under an engine other than the default.
udp_setup() {
	case $MMP_ENGINE in
	splice | tc | auto) ;;
	*)
		echo "SKIP $1: UDP mode has no $MMP_ENGINE path (it runs under MMP_ENGINE=splice and tc)"
		exit 0
		;;
	esac
	t_setup "$1"
	udp_ns_setup "$1"
}

# udp_ns_setup ID: after t_setup, what UDP needs in the namespaces: the
# datagram tool, and lo's sysctls through which the kernel paths take a
# remote load balancer's flows (all but splice). For a test that runs under
# every engine (t56) and so cannot use udp_setup.
udp_ns_setup() {
	if [[ ! -x $UDP_TOOL ]]; then
		echo "FAIL $1 setup: $UDP_TOOL missing (make integration-tools)"
		exit 1
	fi
	if [[ $MMP_ENGINE != splice ]] &&
		! ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1; then
		echo "FAIL $1 setup: cannot set lo's route_localnet and accept_local in the proxy namespace"
		exit 1
	fi
}

# udp_fast: true when the proxy under test moves flows in the kernel.
udp_fast() { is_bpf && [[ $MMP_ENGINE != splice ]]; }

# udp_up_start: echo upstreams on 127.0.0.1:UP_PORT (UP4_LOG) and [::1]:UP_PORT (UP6_LOG).
udp_up_start() {
	UP_N=$((${UP_N:-0} + 1))
	UP4_LOG="$T_TMP/udp-up4-$UP_N.log"
	UP6_LOG="$T_TMP/udp-up6-$UP_N.log"
	proc_start UP4_PID "$UP4_LOG" "$TOPO_PROXY" "$UDP_TOOL" echo -l "127.0.0.1:$UP_PORT"
	proc_start UP6_PID "$UP6_LOG" "$TOPO_PROXY" "$UDP_TOOL" echo -l "[::1]:$UP_PORT"
	wait_grep "$UP4_LOG" '^listening' 5 && wait_grep "$UP6_LOG" '^listening' 5
}

# wait_udp_port NS PORT [TIMEOUT_S] [PID]: wait until a UDP socket is bound to PORT in NS.
wait_udp_port() {
	local ns=$1 port=$2 timeout=${3:-10} pid=${4:-} i
	for ((i = 0; i < timeout * 20; i++)); do
		[[ -n $(ns_exec "$ns" ss -Hlun "sport = :$port" 2>/dev/null) ]] && return 0
		[[ -n $pid ]] && ! proc_alive "$pid" && return 1
		sleep 0.05
	done
	return 1
}

# udp_mmp_start [--udp-header M] [-c S] [-a FILE] [-l ADDR] [--listeners N] [-m MARK] [-v N] [--metrics ADDR:PORT]
#               [--udp-max-flows-per-lb N] [--allowed-endpoints FILE]:
# start the proxy in UDP mode in the proxy namespace; sets what lib.sh's
# mmp_stop and case_lifecycle use (MMP_PID, MMP_LOG, MMP_PINDIR, MMP_STARTS).
# UDP_WRAP (an array) is put in front of the command, e.g. (prlimit --nofile=N:N --).
UDP_WRAP=()
udp_mmp_start() {
	local listen="[::]:$PROXY_PORT" mode="" close="" allow="" listeners="" mark="" metrics="" verbosity=$MMP_VERBOSITY extra=()
	while (($#)); do
		case $1 in
		--udp-header) mode=$2 ;;
		-c) close=$2 ;;
		-a) allow=$2 ;;
		-l) listen=$2 ;;
		--listeners) listeners=$2 ;;
		-m) mark=$2 ;;
		-v) verbosity=$2 ;;
		--metrics) metrics=$2 ;;
		--udp-max-flows-per-lb | --allowed-endpoints) extra+=("$1" "$2") ;; # mmproxy-bpf only
		*)
			MMP_START_ERR="udp_mmp_start: unknown option $1"
			return 1
			;;
		esac
		shift 2
	done
	MMP_STARTS=$((MMP_STARTS + 1))
	MMP_PINDIR="/sys/fs/bpf/mmproxy-bpf-test-$$-$MMP_STARTS"
	MMP_LOG="$T_TMP/mmproxy-$MMP_STARTS.log"
	if is_bpf; then
		MMP_CMD=("$MMP_BIN" run -p udp -l "$listen" -4 "127.0.0.1:$UP_PORT" -6 "[::1]:$UP_PORT"
			-v "$verbosity" --pin-dir "$MMP_PINDIR" --engine "$MMP_ENGINE")
		[[ -n $mode ]] && MMP_CMD+=(--udp-header "$mode")
		[[ -n $close ]] && MMP_CMD+=(-c "$close")
		# Without -a, UDP must be told it may accept every source (docs/DESIGN.md §7b).
		if [[ -n $allow ]]; then MMP_CMD+=(-a "$allow"); else MMP_CMD+=(--udp-any-source); fi
		[[ -n $listeners ]] && MMP_CMD+=(--listeners "$listeners")
		[[ -n $mark ]] && MMP_CMD+=(-m "$mark")
		[[ -n $metrics ]] && MMP_CMD+=(--metrics "$metrics")
		MMP_CMD+=("${extra[@]}")
	else
		MMP_CMD=("$MMP_BIN" -p udp -l "$listen" -4 "127.0.0.1:$UP_PORT" -6 "[::1]:$UP_PORT" -v "$verbosity")
		[[ -n $close ]] && MMP_CMD+=(-close-after "$close")
		[[ -n $allow ]] && MMP_CMD+=(-allowed-subnets "$allow")
		[[ -n $listeners ]] && MMP_CMD+=(-listeners "$listeners")
		[[ -n $mark ]] && MMP_CMD+=(-mark "$mark")
	fi
	cleanup_push "rm -rf '$MMP_PINDIR'"
	proc_start MMP_PID "$MMP_LOG" "$TOPO_PROXY" "${UDP_WRAP[@]}" "${MMP_CMD[@]}"
	if ! wait_udp_port "$TOPO_PROXY" "$PROXY_PORT" 10 "$MMP_PID"; then
		MMP_START_ERR="proxy did not bind udp $listen: $(tail -n 5 "$MMP_LOG" | tr '\n' ' ')"
		proc_stop "$MMP_PID" 2
		return 1
	fi
	MMP_RUNNING=1
}

# udp_send NS ARGS...: run mmpt-udp send in NS; its output in UDP_OUT, its
# "result" numbers in UDP_SENT, UDP_ECHOED, UDP_MISSING, UDP_REORDERED, UDP_BAD.
udp_send() {
	local ns=$1 rc
	shift
	UDP_OUT=$(ns_exec "$ns" "$UDP_TOOL" send "$@" 2>&1)
	rc=$?
	udp_send_parse
	return $rc
}

udp_send_parse() {
	read -r _ _ _ _ UDP_SENT _ UDP_ECHOED _ UDP_MISSING _ UDP_REORDERED _ UDP_BAD _ <<<"$(grep -m1 '^result' <<<"$UDP_OUT")"
}

# udp_send_bg NS ARGS...: udp_send in the background (its PID in UDP_BG_PID);
# udp_send_wait waits for it and sets what udp_send sets, with its status.
udp_send_bg() {
	local ns=$1
	shift
	ns_exec "$ns" "$UDP_TOOL" send "$@" >"$T_TMP/udp-send-bg.out" 2>&1 &
	UDP_BG_PID=$!
}
udp_send_wait() {
	local rc
	wait "$UDP_BG_PID"
	rc=$?
	UDP_OUT=$(cat "$T_TMP/udp-send-bg.out")
	udp_send_parse
	return $rc
}

# udp_result: the sender's result line, for messages.
udp_result() { grep -m1 -e '^result' -e 'mmpt-udp:' <<<"$UDP_OUT" || echo "$UDP_OUT" | head -2; }

# udp_counters: all of mmp_udp_cnt as "name value" lines (refreshed by the proxy every second).
# bpftool -j gives raw bytes and, with BTF, "formatted": the named fields.
udp_counters() {
	bpftool -j map lookup pinned "$MMP_PINDIR/mmp_udp_cnt" key 0 0 0 0 2>/dev/null |
		python3 -c 'import json,sys; [print(k, v) for k, v in json.load(sys.stdin)["formatted"]["value"].items()]'
}

# udp_counter NAME: one counter's current value in the map (empty if unreadable).
udp_counter() { udp_counters | awk -v n="$1" '$1 == n { print $2 }'; }

# udp_counters_fresh: wait until the maps have been refreshed after now: the
# flow map (mmp_udp_flows) once a second, by each listener thread's tick.
udp_counters_fresh() { sleep 1.2; }
# udp_totals_fresh: the same for the totals only (mmp_udp_cnt, udp_counter),
# published every 100 ms (user/cli/run.c; a loaded host wakes the main thread
# late). Not for flow entries: t34 read a flow's count a datagram short.
udp_totals_fresh() { sleep 0.3; }

# udp_flows_json: mmp_udp_flows as a JSON list of {"key": cookie, "value": {named fields}}.
# A dump walks the hash with get_next_key, which starts over when the key it
# stands on is deleted meanwhile (flows closing): entries can repeat, so keep
# one per key. A key deleted between get_next_key and its lookup comes out as
# {"key", "error"} with no "formatted" part: it is gone, so skip it.
udp_flows_json() {
	bpftool -j map dump pinned "$MMP_PINDIR/mmp_udp_flows" 2>/dev/null |
		python3 -c 'import json,sys; json.dump(list({e["formatted"]["key"]: e["formatted"] for e in json.load(sys.stdin) if "formatted" in e}.values()), sys.stdout)'
}

# udp_flows_for ADDR PORT: "cookie created_ns pkts_up pkts_down lb_port" per flow of that client.
udp_flows_for() {
	udp_flows_json | python3 -c '
import ipaddress, json, sys
want_ip, want_port = ipaddress.ip_address(sys.argv[1]), int(sys.argv[2])
for e in json.load(sys.stdin):
    v = e["value"]; c = v["client"]
    n = 4 if c["family"] == 2 else 16
    ip = ipaddress.ip_address(bytes(c["addr"][:n]))
    if ip == want_ip and c["port"] == want_port:
        print(e["key"], v["created_ns"], v["pkts_up"], v["pkts_down"], v["lb"]["port"])
' "$1" "$2"
}

# udp_has_port PORT: a flow with that client port is in mmp_udp_flows (cheap enough to poll every 20 ms).
udp_has_port() { bpftool map dump pinned "$MMP_PINDIR/mmp_udp_flows" 2>/dev/null | grep -q "\"port\": $1,"; }

# udp_flow_count: entries in mmp_udp_flows.
udp_flow_count() { udp_flows_json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo 0; }

# udp_peer_seen LOG ADDR PORT: the upstream logged "peer ADDR PORT".
udp_peer_seen() { grep -q "^peer $2 $3\$" "$1"; }

# udp_seqerrs LOG: the upstream's sequence errors so far.
udp_seqerrs() { grep -c '^seqerr' "$1"; }
