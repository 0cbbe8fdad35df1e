# shellcheck shell=bash
# shellcheck disable=SC2034 # variables are set here for the scripts that source this
# tests/integration/lib.sh: helpers shared by the integration test files
# (tNN-*.sh). Source it; then call t_setup.
#
# Environment:
#   MMP_BIN        proxy under test (default build/mmproxy-bpf); go-mmproxy works
#                  too: its flags are translated and the mmproxy-bpf-only
#                  assertions (log lines, fd counts, pins, capabilities) are
#                  printed as SKIP.
#   MMP_ENGINE     --engine for mmproxy-bpf (default splice). The same tests run
#                  for every engine; never copy a test per engine.
#   MMP_TOOLS      where the test tools are (default build/tests/tools)
#   MMP_VERBOSITY  -v for the proxy (default 1: log errors of connections)
#   MMP_FLAVOR     bpf | go (default: go when MMP_BIN's name has "go-mmproxy")
#   MMP_KEEP_TMP   set to keep each file's temp dir (all logs) for debugging
#   MMP_TC_HANDOFF_DELAY  --tc-handoff-delay in ms (default 0 here, 20 in the
#                  product): the suite hands every flow to the tc engine at
#                  once, however short, so that every case exercises it;
#                  t17 tests the delay itself.
#
# Every case prints exactly one line "PASS name" / "FAIL name: reasons" (or
# "SKIP name: why"); assertions skipped inside a case are listed on one more
# line "SKIP name [what; what]". run-all.sh counts those lines.

set -u
T_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$T_LIB_DIR/../.." && pwd)
# shellcheck source=../lib/netns.sh
source "$REPO_ROOT/tests/lib/netns.sh"

MMP_BIN=${MMP_BIN:-build/mmproxy-bpf}
[[ $MMP_BIN == /* ]] || MMP_BIN="$REPO_ROOT/$MMP_BIN"
MMP_ENGINE=${MMP_ENGINE:-splice}
MMP_TOOLS=${MMP_TOOLS:-build/tests/tools}
[[ $MMP_TOOLS == /* ]] || MMP_TOOLS="$REPO_ROOT/$MMP_TOOLS"
MMP_VERBOSITY=${MMP_VERBOSITY:-1}
if [[ -z ${MMP_FLAVOR:-} ]]; then
	case ${MMP_BIN##*/} in
	*go-mmproxy*) MMP_FLAVOR=go ;;
	*) MMP_FLAVOR=bpf ;;
	esac
fi

# Fixed ports: each test file has its own namespaces, so nothing can clash.
PROXY_PORT=7000     # mmproxy listens on 127.0.0.1 or [::1]
UP_PORT=9000        # upstreams on 127.0.0.1 and [::1]
HAP_V1_PORT=8000    # HAProxy send-proxy    on 198.51.100.1 / [2001:db8:1::1]
HAP_V2_PORT=8001    # HAProxy send-proxy-v2
NGINX_PORT=8002     # nginx stream proxy_protocol on

# Log keywords asserted for mmproxy-bpf (one line on the proxy's stderr per
# rejected connection). Keep in sync with user/ and the report to the lead.
KW_INVALID="invalid PROXY header"
KW_TIMEOUT="timed out waiting for PROXY header"
KW_NOT_ALLOWED="not allowed"
KW_UPSTREAM="upstream"
KW_CAP="CAP_NET_ADMIN"

is_bpf() { [[ $MMP_FLAVOR == bpf ]]; }

# ------------------------------------------------------------------ setup --

# t_setup ID: trap, temp dir, bpffs, topology, transparent routing.
T_ID=t
t_setup() {
	T_ID=$1
	cleanup_install_trap
	ulimit -n 20000 2>/dev/null || true
	if [[ -n ${MMP_KEEP_TMP:-} ]]; then # debugging: keep the logs
		T_TMP=$(mktemp -d /tmp/mmpt.XXXXXX) && echo "# $T_ID: logs kept in $T_TMP"
	else
		tmpdir_create T_TMP mmpt || exit 1
	fi
	if ! bpffs_ensure; then
		echo "FAIL $T_ID setup: cannot mount bpffs on /sys/fs/bpf"
		exit 1
	fi
	if ! topo_create "mmpt-$$" || ! topo_transparent_routing "$TOPO_PROXY"; then
		echo "FAIL $T_ID setup: could not create the namespaces"
		exit 1
	fi
	# The proxy namespace's lock files (docs/DESIGN.md §6b) go with it; pushed
	# here, the removal runs after every process of the file has been stopped.
	cleanup_push "rm -rf /run/mmproxy-bpf/locks/net-$(stat -L -c '%d-%i' "/run/netns/$TOPO_PROXY")"
	for tool in mmpt-client mmpt-upstream mmpt-flood; do
		if [[ ! -x $MMP_TOOLS/$tool ]]; then
			echo "FAIL $T_ID setup: $MMP_TOOLS/$tool missing (make integration-tools)"
			exit 1
		fi
	done
	# Every spoofed client ip:port in a run is unique (see next_port), so a
	# TIME_WAIT left by one case never changes another case's outcome.
	T_NEXT_PORT=20000
}

# next_port VAR: a fresh client port for hand-made headers.
next_port() {
	printf -v "$1" '%s' "$T_NEXT_PORT"
	T_NEXT_PORT=$((T_NEXT_PORT + 1))
}

# ------------------------------------------------------------ case output --

case_begin() {
	CASE_NAME="$T_ID $1"
	CASE_ERRS=()
	CASE_SKIPS=()
	CASE_NOTES=()
	CASE_MMP_LOG=${MMP_LOG:-}
	CASE_MMP_MARK=$(log_mark "${MMP_LOG:-/dev/null}")
}
case_fail() { CASE_ERRS+=("$*"); }
case_skip_part() { CASE_SKIPS+=("$*"); }
case_note() { CASE_NOTES+=("$*"); }

# case_end: print the verdict; on FAIL also what the proxy logged meanwhile.
case_end() {
	local IFS=$'\x1f' s
	# Pin a crash on the case during which it happened (reported once).
	if ((${MMP_RUNNING:-0})) && ! proc_alive "$MMP_PID"; then
		MMP_RUNNING=0
		wait "$MMP_PID" 2>/dev/null
		MMP_DEAD_STATUS=$?
		case_fail "the proxy died during this case (exit status $MMP_DEAD_STATUS)"
	fi
	if ((${#CASE_ERRS[@]})); then
		T_NFAIL=$((${T_NFAIL:-0} + 1))
		s="${CASE_ERRS[*]}"
		echo "FAIL $CASE_NAME: ${s//$'\x1f'/; }"
		if [[ -n ${MMP_LOG:-} && -s $MMP_LOG ]]; then
			# A proxy started during the case: its whole log.
			[[ $MMP_LOG == "$CASE_MMP_LOG" ]] || CASE_MMP_MARK=0
			log_since "$MMP_LOG" "$CASE_MMP_MARK" | tail -n 15 | sed 's/^/    | proxy: /'
		fi
	else
		s="${CASE_NOTES[*]}"
		echo "PASS $CASE_NAME${s:+ (${s//$'\x1f'/; })}"
	fi
	if ((${#CASE_SKIPS[@]})); then
		IFS=$'\x1f'
		s="${CASE_SKIPS[*]}"
		echo "SKIP $CASE_NAME [${s//$'\x1f'/; }]"
	fi
}

# t_finish: end of a test file; exit status 1 when a case failed.
t_finish() {
	exit $((${T_NFAIL:-0} > 0))
}

# case_skip REASON: the whole case does not apply.
case_skip() {
	echo "SKIP $CASE_NAME: $*"
}

# ------------------------------------------------------------------- logs --

# log_mark FILE: the current size; log_since FILE MARK prints what came after.
log_mark() { stat -c %s "$1" 2>/dev/null || echo 0; }
log_since() { tail -c +$(($2 + 1)) "$1" 2>/dev/null; }

# wait_log_since FILE MARK REGEX [TIMEOUT_S]: wait for a new matching line;
# prints it.
wait_log_since() {
	local file=$1 mark=$2 re=$3 timeout=${4:-3} i line
	for ((i = 0; i < timeout * 20; i++)); do
		line=$(log_since "$file" "$mark" | grep -E -m1 -- "$re") && {
			echo "$line"
			return 0
		}
		sleep 0.05
	done
	return 1
}

# ------------------------------------------------------------- upstreams --

# up_start [ARGS...]: one mmpt-upstream on 127.0.0.1:UP_PORT (log UP4_LOG) and
# one on [::1]:UP_PORT (UP6_LOG), both with ARGS (default: echo). Separate
# processes, so a "peer" line also says which family's upstream was reached.
up_start() {
	UP_N=$((${UP_N:-0} + 1))
	UP4_LOG="$T_TMP/upstream4-$UP_N.log"
	UP6_LOG="$T_TMP/upstream6-$UP_N.log"
	proc_start UP4_PID "$UP4_LOG" "$TOPO_PROXY" "$MMP_TOOLS/mmpt-upstream" -l "127.0.0.1:$UP_PORT" "$@"
	proc_start UP6_PID "$UP6_LOG" "$TOPO_PROXY" "$MMP_TOOLS/mmpt-upstream" -l "[::1]:$UP_PORT" "$@"
	wait_grep "$UP4_LOG" '^listening' 5 && wait_grep "$UP6_LOG" '^listening' 5
}

up_stop() {
	proc_stop "$UP4_PID" 2
	proc_stop "$UP6_PID" 2
}

# need_bench_tools TNN TOOL...: BENCH_TOOLS (MMP_BENCH_TOOLS, default build/bench)
# holds every TOOL; otherwise FAIL naming the missing one and exit.
need_bench_tools() {
	local t=$1 tool
	shift
	BENCH_TOOLS=${MMP_BENCH_TOOLS:-$REPO_ROOT/build/bench}
	for tool in "$@"; do
		[[ -x $BENCH_TOOLS/$tool ]] || {
			echo "FAIL $t setup: $BENCH_TOOLS/$tool missing (make bench-tools)"
			exit 1
		}
	done
}

# bench_echo_start TNN LOG: bench's `upstream -m echo` (one thread) on
# 127.0.0.1:UP_PORT, UP_PID its pid; otherwise FAIL with LOG's tail and exit.
# SO_REUSEPORT: a second one shares the port.
bench_echo_start() {
	proc_start UP_PID "$2" "$TOPO_PROXY" "$BENCH_TOOLS/upstream" -m echo --threads 1 -l "127.0.0.1:$UP_PORT"
	wait_port "$TOPO_PROXY" "$UP_PORT" 10 "$UP_PID" || {
		echo "FAIL $1 setup: upstream echo did not start: $(tail -n 3 "$2")"
		exit 1
	}
}

# expect_peer LOG MARK ADDR PORT: the upstream logged "peer ADDR PORT" after
# MARK; otherwise the case fails and says what the upstreams saw instead.
expect_peer() {
	local log=$1 mark=$2 addr=$3 port=$4 seen
	if wait_log_since "$log" "$mark" "^peer $addr $port\$" 3 >/dev/null; then
		return 0
	fi
	seen=$( (log_since "$UP4_LOG" "${UP4_MARK:-0}"; log_since "$UP6_LOG" "${UP6_MARK:-0}") |
		grep '^peer' | tr '\n' ',')
	case_fail "upstream did not see $addr:$port (upstreams saw: ${seen:-nothing})"
	return 1
}

# hostport ADDR PORT: "1.2.3.4:80" or "[2001:db8::1]:80".
hostport() {
	if [[ $1 == *:* ]]; then echo "[$1]:$2"; else echo "$1:$2"; fi
}

# up_marks: remember the upstream log sizes (UP4_MARK, UP6_MARK).
up_marks() {
	UP4_MARK=$(log_mark "$UP4_LOG")
	UP6_MARK=$(log_mark "$UP6_LOG")
}

# ------------------------------------------------------------ the client --

# client NS ARGS...: run mmpt-client in NS; output in CLIENT_OUT, exit status
# returned; CLIENT_LOCAL_ADDR/PORT from its "local" line.
client() {
	local ns=$1 rc
	shift
	CLIENT_OUT=$(ns_exec "$ns" "$MMP_TOOLS/mmpt-client" "$@" 2>&1)
	rc=$?
	read -r _ CLIENT_LOCAL_ADDR CLIENT_LOCAL_PORT <<<"$(grep -m1 '^local ' <<<"$CLIENT_OUT")"
	return $rc
}

# client_result: the client's result line (everything but "local").
client_result() { grep -v '^local ' <<<"$CLIENT_OUT" | tr '\n' ' ' | sed 's/ $//'; }

# check_xfer_exact DONE_LINE CLIENT_ADDR: mmpt-upstream's "done ADDR PORT
# sent N SHA recv N SHA" line against mmpt-client's "xfer" line in CLIENT_OUT
# (both in xfer mode): the upstream saw CLIENT_ADDR and the client's local
# port, both ends sent SIZE bytes, and each received exactly what the other
# sent. Each mismatch is a case_fail.
check_xfer_exact() {
	local done_line=$1 want_addr=$2 a p un ush urn ursh cs csh crn crsh
	read -r _ a p _ un ush _ urn ursh <<<"$done_line"
	read -r _ _ cs csh _ crn crsh _ <<<"$(grep '^xfer ' <<<"$CLIENT_OUT")"
	[[ $a == "$want_addr" && $p == "$CLIENT_LOCAL_PORT" ]] ||
		case_fail "upstream saw $a:$p, the client is $CLIENT_LOCAL_ADDR:$CLIENT_LOCAL_PORT"
	[[ $cs == "$SIZE" && $un == "$SIZE" ]] || case_fail "sizes sent: client $cs, upstream $un (want $SIZE)"
	[[ $urn == "$cs" && $ursh == "$csh" ]] ||
		case_fail "client->upstream: sent $cs bytes ${csh:0:12}, upstream got $urn ${ursh:0:12}"
	[[ $crn == "$un" && $crsh == "$ush" ]] ||
		case_fail "upstream->client: sent $un bytes ${ush:0:12}, client got $crn ${crsh:0:12}"
	grep -q ' error ' <<<"$done_line" && case_fail "upstream: error ${done_line#* error }"
	return 0 # the verdict is in case_fail, not in the status
}

# check_flood_clients EXPECT_FILE: every client that mmpt-flood claimed (its
# --expect-file) reached the IPv4 upstream exactly once since UP4_MARK, and
# no other peer did. Each mismatch is a case_fail.
check_flood_clients() {
	local want=$T_TMP/flood-want seen=$T_TMP/flood-seen missing extra dups
	log_since "$UP4_LOG" "$UP4_MARK" | grep '^peer ' | cut -d' ' -f2- | sort >"$seen"
	sort "$1" >"$want"
	missing=$(comm -23 "$want" "$seen" | wc -l)
	extra=$(comm -13 "$want" "$seen" | wc -l)
	dups=$(uniq -d "$seen" | wc -l)
	((missing == 0)) || case_fail "$missing clients never reached the upstream (e.g. $(comm -23 "$want" "$seen" | head -1))"
	((extra == 0)) || case_fail "upstream saw $extra unexpected peers (e.g. $(comm -13 "$want" "$seen" | head -1))"
	((dups == 0)) || case_fail "$dups clients reached the upstream twice"
}

# echo_via_proxy SRC DST [EXTRA...]: as the load balancer, send a hand-made v2
# header claiming SRC to the proxy on 127.0.0.1, expect an echo, and expect
# the upstream to have seen SRC. Used as "a good connection still works".
echo_via_proxy() {
	local src=$1 dst=$2
	shift 2
	up_marks
	if ! client "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" --pp2 "$src" "$dst" --msg 'ping\n' --timeout 5 "$@"; then
		case_fail "good connection from $src failed: $(client_result)"
		return 1
	fi
	local addr=${src%:*} port=${src##*:}
	addr=${addr#[}
	addr=${addr%]}
	if [[ $addr == *:* ]]; then
		expect_peer "$UP6_LOG" "$UP6_MARK" "$addr" "$port"
	else
		expect_peer "$UP4_LOG" "$UP4_MARK" "$addr" "$port"
	fi
}

# ------------------------------------------------------------- the proxy --

# mmp_cmdline [-l ADDR] [-4 ADDR] [-6 ADDR] [-a FILE] [-m MARK] [--listeners N]
#             [--header-timeout S] [--connect-timeout S] [--xdp-iface IF] [--xdp-mode M] [--metrics ADDR:PORT]
# Builds MMP_CMD for the binary under test: one place knows both CLIs.
# mmproxy-bpf: `run`, go-mmproxy's flags, --pin-dir, --engine.
# go-mmproxy: no `run`, -allowed-subnets/-mark/-listeners; it has no header or
# connect timeout, pins or engines, so those are dropped (MMP_DROPPED).
MMP_STARTS=0
mmp_cmdline() {
	local listen="127.0.0.1:$PROXY_PORT" v4="127.0.0.1:$UP_PORT" v6="[::1]:$UP_PORT"
	local allow="" mark="" listeners="" ht="" ct="" xdp_if="" xdp_mode="" metrics="" extra=()
	while (($#)); do
		case $1 in
		-l) listen=$2 ;;
		-4) v4=$2 ;;
		-6) v6=$2 ;;
		-a) allow=$2 ;;
		-m) mark=$2 ;;
		--listeners) listeners=$2 ;;
		--header-timeout) ht=$2 ;;
		--connect-timeout) ct=$2 ;;
		--xdp-iface) xdp_if=$2 ;;
		--xdp-mode) xdp_mode=$2 ;;
		--metrics) metrics=$2 ;;
		--strip-stacked | --lift-pipe-limits) # mmproxy-bpf's flags without a value
			extra+=("$1")
			shift
			continue
			;;
		--*) extra+=("$1" "$2") ;; # mmproxy-bpf's other valued options, passed as they are
		*)
			echo "mmp_cmdline: unknown option $1" >&2
			return 1
			;;
		esac
		shift 2
	done
	MMP_STARTS=$((MMP_STARTS + 1))
	MMP_DEAD_STATUS=""
	MMP_LISTEN=$listen
	MMP_PINDIR="/sys/fs/bpf/mmproxy-bpf-test-$$-$MMP_STARTS"
	MMP_DROPPED=()
	if is_bpf; then
		MMP_CMD=("$MMP_BIN" run -l "$listen" -4 "$v4" -6 "$v6" -v "$MMP_VERBOSITY"
			--pin-dir "$MMP_PINDIR" --engine "$MMP_ENGINE" --tc-handoff-delay "${MMP_TC_HANDOFF_DELAY:-0}")
		[[ -n $allow ]] && MMP_CMD+=(-a "$allow")
		[[ -n $mark ]] && MMP_CMD+=(-m "$mark")
		[[ -n $listeners ]] && MMP_CMD+=(--listeners "$listeners")
		[[ -n $ht ]] && MMP_CMD+=(--header-timeout "$ht")
		[[ -n $ct ]] && MMP_CMD+=(--connect-timeout "$ct")
		[[ -n $xdp_if ]] && MMP_CMD+=(--xdp-iface "$xdp_if")
		[[ -n $xdp_mode ]] && MMP_CMD+=(--xdp-mode "$xdp_mode")
		[[ -n $metrics ]] && MMP_CMD+=(--metrics "$metrics")
		MMP_CMD+=("${extra[@]}")
	else
		MMP_CMD=("$MMP_BIN" -l "$listen" -4 "$v4" -6 "$v6" -v "$MMP_VERBOSITY")
		[[ -n $allow ]] && MMP_CMD+=(-allowed-subnets "$allow")
		[[ -n $mark ]] && MMP_CMD+=(-mark "$mark")
		[[ -n $listeners ]] && MMP_CMD+=(-listeners "$listeners")
		[[ -n $ht ]] && MMP_DROPPED+=(--header-timeout)
		[[ -n $ct ]] && MMP_DROPPED+=(--connect-timeout)
		[[ -n $metrics ]] && MMP_DROPPED+=(--metrics)
		for ((i = 0; i < ${#extra[@]}; i += 2)); do MMP_DROPPED+=("${extra[i]}"); done
	fi
	return 0
}

# mmp_start [mmp_cmdline options]: start the proxy in the proxy namespace and
# wait until it listens. Sets MMP_PID, MMP_LOG (its stdout+stderr).
# On failure returns 1 with MMP_START_ERR set.
MMP_LIFECYCLE_ERRS=()
MMP_PINS_SEEN=0
mmp_start() {
	mmp_cmdline "$@" || return 1
	((${#MMP_DROPPED[@]})) && echo "# go-mmproxy has no ${MMP_DROPPED[*]}: not passed"
	MMP_LOG="$T_TMP/mmproxy-$MMP_STARTS.log"
	# Pins are removed even if the proxy is killed or never cleans up.
	cleanup_push "rm -rf '$MMP_PINDIR'"
	proc_start MMP_PID "$MMP_LOG" "$TOPO_PROXY" "${MMP_CMD[@]}"
	if ! wait_port "$TOPO_PROXY" "${MMP_LISTEN##*:}" 10 "$MMP_PID"; then
		MMP_START_ERR="proxy did not start listening on $MMP_LISTEN: $(tail -n 5 "$MMP_LOG" | tr '\n' ' ')"
		proc_stop "$MMP_PID" 2
		return 1
	fi
	MMP_RUNNING=1
	return 0
}

# mmp_stop: SIGTERM the proxy. For mmproxy-bpf, record lifecycle errors: it
# must still have been running, exit 0 within 10 s, and leave no pins.
mmp_stop() {
	local npins
	MMP_RUNNING=0
	if ! proc_alive "$MMP_PID"; then
		if [[ -z ${MMP_DEAD_STATUS:-} ]]; then
			wait "$MMP_PID" 2>/dev/null
			MMP_DEAD_STATUS=$?
		fi
		MMP_LIFECYCLE_ERRS+=("proxy #$MMP_STARTS exited on its own (status $MMP_DEAD_STATUS) before SIGTERM")
		return
	fi
	if is_bpf; then
		npins=$(find "$MMP_PINDIR" -mindepth 1 2>/dev/null | wc -l)
		MMP_PINS_SEEN=$((MMP_PINS_SEEN + npins))
	fi
	proc_stop "$MMP_PID" 10
	is_bpf || return 0
	if ((PROC_KILLED)); then
		MMP_LIFECYCLE_ERRS+=("proxy #$MMP_STARTS ignored SIGTERM for 10 s (killed)")
	elif ((PROC_STATUS != 0)); then
		MMP_LIFECYCLE_ERRS+=("proxy #$MMP_STARTS exited $PROC_STATUS on SIGTERM")
	fi
	if [[ -n $(find "$MMP_PINDIR" -mindepth 1 2>/dev/null) ]]; then
		MMP_LIFECYCLE_ERRS+=("proxy #$MMP_STARTS left pins: $(find "$MMP_PINDIR" -mindepth 1 | head -3 | tr '\n' ' ')$(mmp_kept_flows "$MMP_PINDIR")")
	fi
}

# mmp_kept_flows PINDIR: why a tc instance kept its pins, for the lifecycle's
# FAIL: the flows it judged alive, with the state that judged them (a flow
# ends on both FINs or an RST, include/mmp_tc.h), and its last words.
mmp_kept_flows() {
	[[ -e $1/mmp_tc_flows ]] || return 0
	printf '; flows kept: %s' "$(bpftool -j map dump pinned "$1/mmp_tc_flows" 2>/dev/null | jq -r --arg now "$(awk '{print $1}' /proc/uptime)" '
		[.[].formatted.value | "mode \(.mode) carrying \(.carrying) fin \(.st.fin) rst \(.st.rst) packets \(.st.packets) snd_nxt \(.st.snd_nxt) rcv_wnd \(.st.rcv_wnd) idle \((($now | tonumber) - .st.last_seen_ns / 1e9) | floor) s"] | join("; ")' 2>/dev/null)"
	printf '; log: %s' "$(grep -v libbpf "$MMP_LOG" | grep -e 'tc engine' -e aborted | tail -n 3 | tr '\n' ' ')"
	# The endpoints' sockets, with their timers: a FIN or a probe still resent, or nothing left.
	local ns
	for ns in "${TOPO_PROXY:-}" "${TOPO_CLIENT:-}"; do
		[[ -n $ns ]] && printf '; sockets in %s: %s' "$ns" "$(ip netns exec "$ns" ss -tnoH state all exclude listening 2>/dev/null | head -8 | tr -s ' \n' '  ')"
	done
}

# case_lifecycle: the last case of every file, over all the proxies it ran.
case_lifecycle() {
	local e
	case_begin "lifecycle: every proxy ran until SIGTERM, exited 0 and removed its pins"
	# For go-mmproxy only "died before SIGTERM" can be recorded: still a FAIL.
	for e in "${MMP_LIFECYCLE_ERRS[@]}"; do case_fail "$e"; done
	if is_bpf; then
		case_note "$MMP_STARTS starts, $MMP_PINS_SEEN pins seen while running"
	else
		case_skip_part "exit status and pins: go-mmproxy has neither"
	fi
	MMP_LOG=""
	case_end
}

# mmp_fds: the proxy's open file descriptors.
mmp_fds() { find "/proc/$MMP_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# mmp_fds_back BASE [TIMEOUT_S]: wait for the fd count to return to BASE.
mmp_fds_back() {
	local base=$1 timeout=${2:-5} i n
	for ((i = 0; i < timeout * 10; i++)); do
		n=$(mmp_fds)
		((n <= base)) && return 0
		sleep 0.1
	done
	case_fail "proxy holds $n fds, baseline $base (leak?)"
	return 1
}

# ------------------------------------------------- load balancers (senders) --

# hap_start [NS FRONT4 FRONT6 TO]: HAProxy in NS (the proxy ns), frontends on
# FRONT4 and [FRONT6] (198.51.100.1 and [2001:db8:1::1]): HAP_V1_PORT with
# send-proxy, HAP_V2_PORT with send-proxy-v2, both to mmproxy on
# TO:PROXY_PORT (127.0.0.1). -db keeps it in the foreground.
hap_start() {
	local ns=${1:-$TOPO_PROXY} front4=${2:-$TOPO_PROXY_IP4} front6=${3:-$TOPO_PROXY_IP6} to=${4:-127.0.0.1}
	local cfg="$T_TMP/haproxy.cfg"
	cat >"$cfg" <<-EOF
		global
		    maxconn 4000
		defaults
		    mode tcp
		    timeout connect 5s
		    timeout client 120s
		    timeout server 120s
		frontend fe_v1
		    bind $front4:$HAP_V1_PORT
		    bind [$front6]:$HAP_V1_PORT
		    default_backend be_v1
		frontend fe_v2
		    bind $front4:$HAP_V2_PORT
		    bind [$front6]:$HAP_V2_PORT
		    default_backend be_v2
		backend be_v1
		    server mmp $to:$PROXY_PORT send-proxy
		backend be_v2
		    server mmp $to:$PROXY_PORT send-proxy-v2
	EOF
	HAP_LOG="$T_TMP/haproxy.log"
	proc_start HAP_PID "$HAP_LOG" "$ns" haproxy -db -f "$cfg"
	wait_port "$ns" "$HAP_V1_PORT" 10 "$HAP_PID" &&
		wait_port "$ns" "$HAP_V2_PORT" 10 "$HAP_PID"
}

# nginx_start: nginx stream proxy with `proxy_protocol on;` (sends v1) on
# NGINX_PORT. Own prefix, config, error log and pid file in the temp dir;
# master_process off, so one PID is the whole of nginx.
nginx_start() {
	local dir="$T_TMP/nginx"
	mkdir -p "$dir"
	cat >"$dir/nginx.conf" <<-EOF
		load_module /usr/lib/nginx/modules/ngx_stream_module.so;
		master_process off;
		worker_processes 1;
		error_log $dir/error.log info;
		pid $dir/nginx.pid;
		events { worker_connections 1024; }
		stream {
		    server {
		        listen $TOPO_PROXY_IP4:$NGINX_PORT;
		        listen [$TOPO_PROXY_IP6]:$NGINX_PORT;
		        proxy_pass 127.0.0.1:$PROXY_PORT;
		        proxy_protocol on;
		    }
		}
	EOF
	NGINX_LOG="$T_TMP/nginx.log"
	# -e: the error log before the config is read (not /var/log/nginx).
	proc_start NGINX_PID "$NGINX_LOG" "$TOPO_PROXY" nginx -e "$dir/error.log" -p "$dir" \
		-c "$dir/nginx.conf" -g 'daemon off;'
	wait_port "$TOPO_PROXY" "$NGINX_PORT" 10 "$NGINX_PID"
}

# t_require CMD...: run a setup step; when it fails, print a FAIL and end
# the file (the EXIT trap cleans up).
t_require() {
	if ! "$@"; then
		echo "FAIL $T_ID setup: '$*' failed ${MMP_START_ERR:-}"
		exit 1
	fi
}

# mmp_totals: after mmp_stop, read the proxy's "totals:" line (mmproxy-bpf
# logs it on exit at -v 1 and above) into MMP_TOT_ACCEPTED, MMP_TOT_SPLICED,
# MMP_TOT_SOCKMAP, MMP_TOT_FALLBACKS, MMP_TOT_RESETS. Returns 1 when there is
# no such line (go-mmproxy, -v 0).
mmp_totals() {
	local line
	line=$(grep -m1 'totals: accepted' "$MMP_LOG" 2>/dev/null) || return 1
	MMP_TOT_ACCEPTED=$(sed -n 's/.*accepted \([0-9]*\).*/\1/p' <<<"$line")
	MMP_TOT_SPLICED=$(sed -n 's/.*spliced \([0-9]*\).*/\1/p' <<<"$line")
	MMP_TOT_SOCKMAP=$(sed -n 's/.*[ (]sockmap \([0-9]*\).*/\1/p' <<<"$line")
	MMP_TOT_FALLBACKS=$(sed -n 's/.*fallbacks \([0-9]*\).*/\1/p' <<<"$line")
	MMP_TOT_RESETS=$(sed -n 's/.*resets forwarded \([0-9]*\).*/\1/p' <<<"$line")
	[[ -n $MMP_TOT_SPLICED && -n $MMP_TOT_SOCKMAP && -n $MMP_TOT_FALLBACKS ]]
}

# case_engine_used N: a case asserting, after mmp_stop, that the proxy spliced
# N connections; with the sockmap engine, that each went through it (none fell
# back to splice), so the file really tested the engine it names.
case_engine_used() {
	local n=$1
	if [[ $MMP_ENGINE == sockmap ]]; then
		case_begin "every connection was spliced, all by the sockmap engine"
	else
		case_begin "every connection was spliced (engine $MMP_ENGINE)"
	fi
	if ! is_bpf; then
		case_skip_part "engine totals: mmproxy-bpf only"
	elif ! mmp_totals; then
		case_skip_part "no totals line in the proxy's log (-v 0?)"
	else
		((MMP_TOT_SPLICED == n)) || case_fail "the proxy spliced $MMP_TOT_SPLICED connections, expected $n"
		if [[ $MMP_ENGINE == sockmap ]]; then
			((MMP_TOT_FALLBACKS == 0)) || case_fail "$MMP_TOT_FALLBACKS connections fell back to splice"
			((MMP_TOT_SOCKMAP == n)) || case_fail "$MMP_TOT_SOCKMAP connections in the sockmap engine, expected $n"
		fi
		case_note "spliced $MMP_TOT_SPLICED, sockmap $MMP_TOT_SOCKMAP, fallbacks $MMP_TOT_FALLBACKS, resets forwarded ${MMP_TOT_RESETS:-?}"
	fi
	MMP_LOG=""
	case_end
}
