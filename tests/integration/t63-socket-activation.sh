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
tc_only t63 "socket activation"
BENCH_TOOLS=${MMP_BENCH_TOOLS:-$REPO_ROOT/build/bench}
for tool in loadgen upstream; do
	[[ -x $BENCH_TOOLS/$tool ]] || {
		echo "FAIL t63 setup: $BENCH_TOOLS/$tool missing (make bench-tools)"
		exit 1
	}
done
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
proc_start UP_PID "$T_TMP/upstream.log" "$TOPO_PROXY" "$BENCH_TOOLS/upstream" -m echo --threads 1 \
	-l "127.0.0.1:$UP_PORT"
wait_port "$TOPO_PROXY" "$UP_PORT" 10 "$UP_PID" || {
	echo "FAIL t63 setup: upstream echo did not start: $(tail -n 3 "$T_TMP/upstream.log")"
	exit 1
}

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
	proc_start BIDIR_PID "$T_TMP/bidir.out" "$TOPO_PROXY" "$MMP_TOOLS/mmpt-bidir" -c "[::1]:$PROXY_PORT" \
		-l "[::1]:$((UP_PORT + 1))" -n "$STREAMS" --parallel "$STREAMS" --size "$STREAM_SIZE" \
		--rate "$STREAM_RATE" --net 2001:db8:5:: --port-base 24000 --timeout 80
	proc_start LG_PID "$T_TMP/loadgen.out" "$TOPO_PROXY" "$BENCH_TOOLS/loadgen" -m connrate -c 8 \
		--connect-rate "$RATE" -T "$DURATION" --warmup 0 --threads 1 -s 64 --proxy v2 \
		--client-range 10.128.0.0/12 -q "127.0.0.1:$PROXY_PORT"
	sleep 2
	for ((i = 0; i < RESTARTS; i++)); do
		touch "$T_TMP/stop-$i"
		wait_grep "$T_TMP/supervise.out" "^start $((i + 1)) " 15 || case_fail "restart $((i + 1)) did not start"
		sleep "$EVERY"
	done
	while proc_alive "$LG_PID"; do sleep 0.2; done
	while proc_alive "$BIDIR_PID"; do sleep 0.2; done
	touch "$T_TMP/stop-$RESTARTS"
	for ((w = 0; w < 150; w++)); do proc_alive "$SSA_PID" || break; sleep 0.1; done
	proc_alive "$SSA_PID" && case_fail "the last instance did not exit on SIGTERM"
	lg=$(sed -n 's/^JSON //p' "$T_TMP/loadgen.out")
	if [[ -z $lg ]]; then
		case_fail "loadgen printed no report: $(tail -n 2 "$T_TMP/loadgen.out" | tr '\n' ' ')"
	else
		read -r opened msgs cerr ioerr reset verr maxms < <(jq -r '[.conns_opened, .msgs, .connect_errors,
			.io_errors, .io_reset, .verify_errors, (.lat_us.max / 1000 | floor)] | @tsv' <<<"$lg")
		((cerr == 0)) || case_fail "$cerr connections refused (connect errors)"
		((reset == 0)) || case_fail "$reset connections reset"
		((ioerr == 0)) || case_fail "$ioerr connections with I/O errors (EOF or reset)"
		((verr == 0)) || case_fail "$verr wrong bytes echoed"
		((msgs > 0 && msgs + 8 >= opened)) || case_fail "$msgs of $opened connections echoed their message"
		case_note "loadgen: $opened connections, $msgs echoed, longest connect+echo $maxms ms (a restart's gap)"
	fi
	summary=$(grep '^bidir ' "$T_TMP/bidir.out")
	[[ $summary == "bidir ok $STREAMS failed 0 "* ]] ||
		case_fail "streams: ${summary:-no summary} $(grep '^conn ' "$T_TMP/bidir.out" | grep -v ' ok down [0-9]* ok$' | head -n 2 | tr '\n' ' ')"
	bad_exits=$(grep '^exit ' "$T_TMP/supervise.out" | grep -v ' 0$' | tr '\n' ' ')
	[[ -z $bad_exits ]] || case_fail "instances that did not exit 0 on SIGTERM: $bad_exits"
	(($(grep -c '^exit ' "$T_TMP/supervise.out") == RESTARTS + 1)) ||
		case_fail "$(grep -c '^exit ' "$T_TMP/supervise.out") of $((RESTARTS + 1)) instances exited: $(tr '\n' ' ' <"$T_TMP/supervise.out")"
	MMP_LOG="$T_TMP/proxy-$RESTARTS.log"
	[[ -z $(find "$PIN" -mindepth 1 2>/dev/null) ]] || case_fail "pins left: $(find "$PIN" -mindepth 1 | head -n 3 | tr '\n' ' ')"
fi
case_end

t_finish
