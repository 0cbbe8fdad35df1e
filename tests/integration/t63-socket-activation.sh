#!/usr/bin/env bash
# t63: restarts under socket activation lose nothing (issue 27, "the same
# through the shipped units"; docs/DESIGN.md §15).
#
#   1 systemd-socket-activate holds the listening socket 127.0.0.1:7000, as
#     scripts/mmproxy-bpf@.socket makes systemd do, and runs a supervisor
#     that plays `systemctl restart` 5 times: SIGTERM, wait for the exit,
#     start again, with the ExecStart= of scripts/mmproxy-bpf@.service
#     (binary and $MMPROXY_ARGS substituted); the 2nd and 4th start run
#     another build (a copy of the binary). Meanwhile `loadgen -m connrate`
#     opens new connections (every one echoed and checked) and mmpt-bidir
#     runs 8 long streams both ways through the same port. Result: no connect
#     error, no reset, no wrong byte, every connection echoed, every stream
#     complete and byte-exact, every instance exits 0 on SIGTERM, no pin left
#     at the end. Prints the longest connect+echo time (a restart's gap: the
#     connections wait in the socket's queue meanwhile).
# tc engine only: its streams are spliced in the kernel and adopted by each
# new process. On splice a stop drains the streams it holds (up to
# --drain-timeout) before the next start can accept: use --takeover there
# (t62).
#
# On a build without socket activation (MMP_BIN=/work/main/build/mmproxy-bpf)
# the first start fails to bind the port systemd-socket-activate holds: FAIL.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
source "$(dirname "$0")/takeover-lib.sh"
tc_only t63 "socket activation"
need_bench_tools t63 loadgen upstream
command -v systemd-socket-activate >/dev/null || {
	echo "FAIL t63 setup: systemd-socket-activate is not installed (make deps: systemd)"
	exit 1
}
t_setup t63

RESTARTS=5
EVERY=4
STREAMS=8
STREAM_SIZE=$((20 << 20))
STREAM_RATE=768K
RATE=200
DURATION=$((RESTARTS * EVERY + 4))
PIN=$(tc_pindir activated)
OTHER_BIN="$T_TMP/other-build/mmproxy-bpf"
mkdir -p "${OTHER_BIN%/*}" && cp "$MMP_BIN" "$OTHER_BIN"
UNIT="$REPO_ROOT/scripts/mmproxy-bpf@.service"
SOCKET_UNIT="$REPO_ROOT/scripts/mmproxy-bpf@.socket"
# One dual-stack port: loadgen's IPv4 clients go to the echo server (-4), the
# streams' IPv6 clients (load balancer on ::1, so the tc engine can take
# them) to mmpt-bidir's upstream end (-6).
LISTEN="[::]:$PROXY_PORT"
ARGS="-l $LISTEN -4 127.0.0.1:$UP_PORT -6 [::1]:$((UP_PORT + 1)) -v 1 --pin-dir $PIN --engine tc --tc-handoff-delay 0 --listeners 2"

ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
bench_echo_start t63 "$T_TMP/upstream.log"

# The supervisor: systemd's part of a `systemctl restart` (SIGTERM, wait,
# start), each start as the unit's ExecStart= with LISTEN_PID set to the
# child's own pid (exec keeps it), which sd_listen_fds checks.
cat >"$T_TMP/supervise.sh" <<'SUP'
#!/usr/bin/env bash
# Arguments: DIR RESTARTS BIN OTHER_BIN EXEC_START ARGS
dir=$1 restarts=$2 bin=$3 other=$4 exec_start=$5 args=$6
for ((i = 0; i <= restarts; i++)); do
	b=$bin
	((i == 2 || i == 4)) && b=$other
	cmd=${exec_start/'$MMPROXY_ARGS'/$args}
	cmd="$b ${cmd#* }"
	# shellcheck disable=SC2086 # the unit's words, as systemd splits them
	bash -c 'export LISTEN_PID=$$; exec "$@"' _ $cmd >"$dir/proxy-$i.log" 2>&1 &
	pid=$!
	echo "start $i $pid" >>"$dir/supervise.out"
	while [[ ! -e $dir/stop-$i ]]; do sleep 0.05; done
	kill -TERM "$pid"
	wait "$pid"
	echo "exit $i $?" >>"$dir/supervise.out"
done
SUP
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")

case_begin "1 $RESTARTS restarts under socket activation (the units' command) with connrate load and $STREAMS long streams: nothing refused, reset or wrong"
cleanup_push "rm -rf '$PIN'"
: >"$T_TMP/supervise.out"
if [[ ! -f $SOCKET_UNIT ]]; then
	case_fail "$SOCKET_UNIT is missing"
elif [[ $exec_start != *' run $MMPROXY_ARGS' ]]; then
	case_fail "the unit's ExecStart= is not 'BIN run \$MMPROXY_ARGS': $exec_start"
else
	proc_start SSA_PID "$T_TMP/ssa.log" "$TOPO_PROXY" systemd-socket-activate -l "$LISTEN" \
		bash "$T_TMP/supervise.sh" "$T_TMP" "$RESTARTS" "$MMP_BIN" "$OTHER_BIN" "$exec_start" "$ARGS"
	wait_port "$TOPO_PROXY" "$PROXY_PORT" 10 "$SSA_PID" || case_fail "systemd-socket-activate did not listen: $(tail -n 2 "$T_TMP/ssa.log")"
	# It starts its child at the first connection: this one, echoed like loadgen's.
	ns_exec "$TOPO_PROXY" "$BENCH_TOOLS/loadgen" -m connrate -c 1 --connect-rate 10 -T 1 --warmup 0 --threads 1 \
		-s 64 --proxy v2 --client-range 10.144.0.0/16 -q "127.0.0.1:$PROXY_PORT" >"$T_TMP/first.out" 2>&1
	wait_grep "$T_TMP/proxy-0.log" "listening on" 15 || case_fail "the first start did not listen: $(grep -v libbpf "$T_TMP/proxy-0.log" 2>/dev/null | tail -n 2 | tr '\n' ' ')"
	restart_load_start "[::1]:$PROXY_PORT" "[::1]:$((UP_PORT + 1))" 2001:db8:5:: 8 "127.0.0.1:$PROXY_PORT"
	sleep 2
	for ((i = 0; i < RESTARTS; i++)); do
		touch "$T_TMP/stop-$i"
		wait_grep "$T_TMP/supervise.out" "^start $((i + 1)) " 15 || case_fail "restart $((i + 1)) did not start"
		sleep "$EVERY"
	done
	restart_load_wait
	touch "$T_TMP/stop-$RESTARTS"
	for ((w = 0; w < 150; w++)); do proc_alive "$SSA_PID" || break; sleep 0.1; done
	proc_alive "$SSA_PID" && case_fail "the last instance did not exit on SIGTERM"
	restart_load_check "a restart's gap"
	bad_exits=$(grep '^exit ' "$T_TMP/supervise.out" | grep -v ' 0$' | tr '\n' ' ')
	[[ -z $bad_exits ]] || case_fail "instances that did not exit 0 on SIGTERM: $bad_exits"
	(($(grep -c '^exit ' "$T_TMP/supervise.out") == RESTARTS + 1)) ||
		case_fail "$(grep -c '^exit ' "$T_TMP/supervise.out") of $((RESTARTS + 1)) instances exited: $(tr '\n' ' ' <"$T_TMP/supervise.out")"
	MMP_LOG="$T_TMP/proxy-$RESTARTS.log"
	[[ -z $(find "$PIN" -mindepth 1 2>/dev/null) ]] || case_fail "pins left: $(find "$PIN" -mindepth 1 | head -n 3 | tr '\n' ' ')"
fi
case_end

t_finish
