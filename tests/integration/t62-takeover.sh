#!/usr/bin/env bash
# t62: `run --takeover` under load loses nothing (issue 27, "Restart test";
# docs/DESIGN.md §15).
#
#   1 The proxy serves -l 127.0.0.1:7000-7001 (a port range: sk_lookup) with
#     -4 127.0.0.1:9000-9001. Through port 7000, `loadgen -m connrate` opens
#     new connections for the whole run, each one PROXY v2, one message
#     echoed by `upstream -m echo` and checked byte for byte; through port
#     7001, mmpt-bidir runs 8 long streams both ways, every byte checked
#     (paced: they last past the last takeover). Meanwhile the proxy is taken
#     over 5 times with `run --takeover` and the same flags, the 2nd and 4th
#     time by another build (a copy of the binary at another path). Result:
#     no connect error (refused), no reset, no wrong byte, every connection
#     of loadgen echoed, every stream complete and byte-exact; every
#     predecessor exits 0 once its streams ended; the predecessors accept at
#     most two connections per takeover after their successor attached its
#     SO_REUSEPORT program (docs/DESIGN.md §15: about 10 each without it,
#     which a closing listener could reset); after the last instance's
#     SIGTERM no pin is left and net.ipv4.tcp_migrate_req is back to its
#     value before the test. Prints the longest connect+echo time loadgen saw
#     (the longest accept gap is at most that).
#   2 Bad takeovers (tests/BAD_INPUT.md): --takeover with no running
#     instance, with other flags than the running one's, with -p udp; and a
#     second start without --takeover. Each exits non-zero with one line
#     naming the cause and the fix; the running instance keeps serving and
#     exits 0 without leaving a pin.
# By hand, an upgrade: T62_OTHER_BIN=PATH takes over with another build.
# By hand, a stress run: T62_RATE=0 T62_CONNS=64 (unbounded connection rate)
# with T62_TAKEOVERS / T62_DURATION. On 2 cores that overloads the host:
# loadgen then sees connect errors with no takeover at all (287 in 24 s), so
# only "0 reset" means something there (5 takeovers: 0 resets; with the
# predecessor's tcp_migrate_req step disabled: 10).
# Engines: splice (the streams stay in userspace: every predecessor drains
# them) and tc (the streams are spliced in the kernel and adopted). sockmap
# behaves as splice here and is skipped to keep CI short.
#
# On a build without --takeover (MMP_BIN=/work/main/build/mmproxy-bpf) each
# takeover is the restart such a build offers, SIGTERM then a new start, and
# the case fails: connections refused or reset, streams cut.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
source "$(dirname "$0")/takeover-lib.sh"
if [[ $MMP_FLAVOR != bpf || ($MMP_ENGINE != splice && $MMP_ENGINE != tc) ]]; then
	echo "SKIP t62 takeover under load: engines splice and tc only (MMP_ENGINE=$MMP_ENGINE, $MMP_FLAVOR)"
	exit 0
fi
need_bench_tools t62 loadgen upstream
[[ -x $MMP_TOOLS/mmpt-bidir ]] || {
	echo "FAIL t62 setup: $MMP_TOOLS/mmpt-bidir missing (make integration-tools)"
	exit 1
}
t_setup t62

TAKEOVERS=${T62_TAKEOVERS:-5}
EVERY=4        # seconds between takeovers
STREAMS=8
STREAM_SIZE=$((20 << 20))
STREAM_RATE=768K # each way: 20 MiB last about 27 s, past the last takeover
RATE=${T62_RATE:-200} # loadgen's new connections a second
DURATION=${T62_DURATION:-$((TAKEOVERS * EVERY + 4))}
PIN=$(tc_pindir takeover)
# T62_OTHER_BIN: a real other build (an upgrade) instead of a copy, e.g.
# make BUILD=/tmp/b2 VERSION=next && T62_OTHER_BIN=/tmp/b2/mmproxy-bpf ...
OTHER_BIN=${T62_OTHER_BIN:-$T_TMP/other-build/mmproxy-bpf}
[[ -n ${T62_OTHER_BIN:-} ]] || { mkdir -p "${OTHER_BIN%/*}" && cp "$MMP_BIN" "$OTHER_BIN"; }
migrate0=$(ns_exec "$TOPO_PROXY" cat /proc/sys/net/ipv4/tcp_migrate_req)
if "$MMP_BIN" run --help 2>&1 | grep -q -- --takeover; then
	HAS_TAKEOVER=1
else
	HAS_TAKEOVER=0
	echo "# t62: $MMP_BIN has no --takeover: each takeover is SIGTERM then a new start"
fi

ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
bench_echo_start t62 "$T_TMP/upstream.log"

# proxy_cmd BIN: the instance's command line; every start and takeover uses the same flags.
proxy_cmd() {
	PROXY_CMD=("$1" run -l "127.0.0.1:$PROXY_PORT-$((PROXY_PORT + 1))" -4 "127.0.0.1:$UP_PORT-$((UP_PORT + 1))"
		-6 "[::1]:$UP_PORT-$((UP_PORT + 1))" -v 1 --pin-dir "$PIN" --engine "$MMP_ENGINE"
		--tc-handoff-delay 0 --listeners 2)
}

PROXY_PIDS=()
PROXY_LOGS=()
# proxy_start BIN [--takeover]: start an instance; PROXY_PIDS/PROXY_LOGS get it.
proxy_start() {
	local bin=$1 pid log
	shift
	proxy_cmd "$bin"
	log="$T_TMP/proxy-${#PROXY_PIDS[@]}.log"
	proc_start pid "$log" "$TOPO_PROXY" "${PROXY_CMD[@]}" "$@"
	PROXY_PIDS+=("$pid")
	PROXY_LOGS+=("$log")
}

case_begin "1 $TAKEOVERS takeovers (2 by another build) under connrate load and $STREAMS long streams: nothing refused, reset or wrong"
cleanup_push "rm -rf '$PIN'"
proxy_start "$MMP_BIN"
MMP_PID=${PROXY_PIDS[0]}
MMP_LOG=${PROXY_LOGS[0]}
if ! wait_port "$TOPO_PROXY" "$PROXY_PORT" 10 "$MMP_PID"; then
	case_fail "the proxy did not start: $(grep -v libbpf "$MMP_LOG" | tail -n 3 | tr '\n' ' ')"
else
	restart_load_start "127.0.0.1:$((PROXY_PORT + 1))" "127.0.0.1:$((UP_PORT + 1))" 203.0.113. "${T62_CONNS:-8}" \
		"127.0.0.1:$PROXY_PORT" --source-range 127.2.0.0/16
	sleep 2
	for ((i = 1; i <= TAKEOVERS; i++)); do
		bin=$MMP_BIN
		((i == 2 || i == 4)) && bin=$OTHER_BIN
		prev=${PROXY_PIDS[-1]}
		if ((HAS_TAKEOVER)); then
			proxy_start "$bin" --takeover
			wait_grep "${PROXY_LOGS[-1]}" "took over from pid $prev" 10 ||
				case_fail "takeover $i: no 'took over from pid $prev' within 10 s: $(grep -v libbpf "${PROXY_LOGS[-1]}" | tail -n 2 | tr '\n' ' ')"
		else
			kill -TERM "$prev"
			while proc_alive "$prev"; do sleep 0.05; done
			proxy_start "$bin"
			wait_port "$TOPO_PROXY" "$PROXY_PORT" 10 "${PROXY_PIDS[-1]}"
		fi
		sleep "$EVERY"
	done
	MMP_PID=${PROXY_PIDS[-1]}
	MMP_LOG=${PROXY_LOGS[-1]}
	restart_load_wait
	restart_load_check "bounds the longest accept gap"
	# The successor's SO_REUSEPORT program takes every new connection before
	# the predecessor closes: at 200 a second, its listeners would accept
	# about 10 more in their 100 ms of settling, and some could be reset.
	# Allowed: two a takeover, a handshake under way and one still queued.
	if ((HAS_TAKEOVER)); then
		late=0
		for ((i = 0; i < ${#PROXY_PIDS[@]} - 1; i++)); do
			n=$(sed -n 's/.*taken over: listeners closed (\([0-9]*\) connections accepted after.*/\1/p' "${PROXY_LOGS[i]}")
			late=$((late + ${n:-0}))
		done
		((late <= 2 * TAKEOVERS)) ||
			case_fail "the predecessors accepted $late connections after their successor took the port (at most $((2 * TAKEOVERS)))"
		case_note "$late connections accepted by a predecessor after its successor took the port"
	fi
	# Every predecessor exits 0 once what it drained has ended.
	for ((i = 0; i < ${#PROXY_PIDS[@]} - 1; i++)); do
		pid=${PROXY_PIDS[i]}
		for ((w = 0; w < 100; w++)); do proc_alive "$pid" || break; sleep 0.1; done
		if proc_alive "$pid"; then
			case_fail "instance $i (pid $pid) still runs after its streams ended"
		else
			wait "$pid" 2>/dev/null
			st=$?
			((st == 0 || !HAS_TAKEOVER)) || case_fail "instance $i exited $st: $(grep -v libbpf "${PROXY_LOGS[i]}" | tail -n 2 | tr '\n' ' ')"
		fi
	done
	proc_stop "$MMP_PID" 10
	((PROC_STATUS == 0)) || case_fail "the last instance exited $PROC_STATUS on SIGTERM"
	left=$(find "$PIN" -mindepth 1 2>/dev/null | tr '\n' ' ')
	[[ -z $left ]] || case_fail "pins left after the last instance's exit: $left"
	migrate1=$(ns_exec "$TOPO_PROXY" cat /proc/sys/net/ipv4/tcp_migrate_req)
	[[ $migrate1 == "$migrate0" ]] || case_fail "net.ipv4.tcp_migrate_req is $migrate1 after the test, $migrate0 before"
fi
case_end

case_begin "2 bad takeovers: one line naming cause and fix each, the running instance untouched; a duplicate without --takeover is still refused"
if ((!HAS_TAKEOVER)); then
	case_skip "$MMP_BIN has no --takeover"
else
	PIN=$(tc_pindir bad)
	cleanup_push "rm -rf '$PIN'"
	# expect_refused WHAT REGEX ARGS...: the start exits non-zero within 15 s with one error line matching REGEX.
	expect_refused() {
		local what=$1 re=$2 pid log
		shift 2
		BAD_N=$((${BAD_N:-0} + 1))
		log="$T_TMP/bad-$BAD_N.log"
		proc_start pid "$log" "$TOPO_PROXY" "$@"
		for ((w = 0; w < 150; w++)); do proc_alive "$pid" || break; sleep 0.1; done
		if proc_alive "$pid"; then
			case_fail "$what: still running after 15 s"
			proc_stop "$pid" 5
			return
		fi
		wait "$pid" 2>/dev/null
		st=$?
		((st != 0)) || case_fail "$what: exit status 0"
		grep -Eq -- "$re" "$log" || case_fail "$what: no line matching '$re': $(grep -v libbpf "$log" | tail -n 2 | tr '\n' ' ')"
	}
	proxy_cmd "$MMP_BIN"
	expect_refused "--takeover with no instance" "--takeover: no mmproxy-bpf instance serves $PIN .*start this one without --takeover" \
		"${PROXY_CMD[@]}" --takeover
	proxy_start "$MMP_BIN"
	MMP_PID=${PROXY_PIDS[-1]}
	MMP_LOG=${PROXY_LOGS[-1]}
	if ! wait_port "$TOPO_PROXY" "$PROXY_PORT" 10 "$MMP_PID"; then
		case_fail "the proxy did not start: $(grep -v libbpf "$MMP_LOG" | tail -n 3 | tr '\n' ' ')"
	else
		proxy_cmd "$MMP_BIN"
		expect_refused "--takeover with other flags" "--takeover: pid $MMP_PID serves $PIN with other flags .*give --takeover exactly its flags" \
			"${PROXY_CMD[@]/--listeners/--header-timeout}" --takeover
		expect_refused "a duplicate without --takeover" "another mmproxy-bpf instance uses $PIN" "${PROXY_CMD[@]}"
		expect_refused "-p udp --takeover" "--takeover serves -p tcp only" "${PROXY_CMD[@]}" -p udp --udp-any-source --takeover
		proc_alive "$MMP_PID" || case_fail "the running instance died"
		grep -q "taken over" "$MMP_LOG" && case_fail "the running instance was told to hand over"
		echo_out=$(ns_exec "$TOPO_PROXY" "$BENCH_TOOLS/loadgen" -m connrate -c 2 --connect-rate 50 -T 1 --warmup 0 \
			--threads 1 -s 64 --proxy v2 --client-range 10.144.0.0/16 -q "127.0.0.1:$PROXY_PORT" 2>&1)
		[[ $(sed -n 's/^JSON //p' <<<"$echo_out" | jq -r '.errors + .connect_errors') == 0 ]] ||
			case_fail "the running instance no longer serves: $(tail -n 3 <<<"$echo_out" | tr '\n' ' ')"
		proc_stop "$MMP_PID" 10
		((PROC_STATUS == 0)) || case_fail "the instance exited $PROC_STATUS on SIGTERM"
		[[ -z $(find "$PIN" -mindepth 1 2>/dev/null) ]] || case_fail "pins left: $(find "$PIN" -mindepth 1 | head -n 3 | tr '\n' ' ')"
	fi
fi
case_end

t_finish
