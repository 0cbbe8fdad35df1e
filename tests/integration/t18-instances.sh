#!/usr/bin/env bash
# t18: instances side by side with default flags (issue 11, point 1;
# docs/DESIGN.md §6a). No --pin-dir anywhere: each instance derives its pin
# directory from -p and -l (/sys/fs/bpf/mmproxy-bpf/tcp-127_0_0_1-PORT) and
# its TC filter priority from that directory.
#
#   1 three instances in one namespace, started with nsenter (one bpffs):
#     three pin directories, three filter priorities on lo; a paced 2 MiB
#     flow each way through each of them at once, every byte checked
#     (mmpt-bidir) and every flow spliced in the kernel (the -v 2 log line,
#     and the flow in `stats --pin-dir`); `stats` without --pin-dir lists the
#     three and asks which; a fourth instance on instance 1's -l is refused
#     with a line naming instance 1's pid.
#   2 long flows (8 MiB each way, paced over 4 s) through instances 1 and 2;
#     meanwhile instance 2 gets SIGTERM (it keeps its filter: its flow lives
#     in the kernel) and instance 3 SIGKILL, then `cleanup -l` of instance 3
#     (its filters and pins only). Both long flows complete byte-exact;
#     instance 1's filter is there throughout; `cleanup --all` afterwards
#     removes instance 2's leftovers and leaves the running instance 1 alone.
#   3 two instances started with `ip netns exec` (each its own bpffs mount,
#     the same TC hooks on lo): both flows at once, byte-exact, in the
#     kernel; a third `ip netns exec` instance on the first one's -l is
#     refused (no shared bpffs: only the netns lock sees it); SIGKILL of the
#     second while the first carries a long flow, then `ip netns exec ...
#     cleanup -l` of the second: the first's flow completes byte-exact.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t18 "instances side by side"
MMP_VERBOSITY=2
t_setup t18

# Listen ports unique to this run: the default pin directories are shared by
# every namespace that sees /sys/fs/bpf.
BASE=$((17000 + ($$ % 1000) * 4))
SIZE=$((2 << 20))
LONG=$((8 << 20))

# inst_start I [ipnetns]: instance I on 127.0.0.1:BASE+I, upstream
# 127.0.0.1:UP_PORT+I, default pin directory. Sets PID_I, LOG_I, DIR_I.
inst_start() {
	local i=$1 how=${2:-nsenter} port=$((BASE + $1)) log="$T_TMP/inst-$1-$RANDOM.log" pid
	local cmd=("$MMP_BIN" run -l "127.0.0.1:$port" -4 "127.0.0.1:$((UP_PORT + i))" -6 "[::1]:$((UP_PORT + i))"
		-v 2 --engine "$MMP_ENGINE" --tc-handoff-delay 0 --listeners 1)
	if [[ $how == ipnetns ]]; then
		ip netns exec "$TOPO_PROXY" "${cmd[@]}" >"$log" 2>&1 </dev/null &
		pid=$!
		cleanup_push "proc_kill $pid"
	else
		proc_start pid "$log" "$TOPO_PROXY" "${cmd[@]}"
	fi
	cleanup_push "rm -rf /sys/fs/bpf/mmproxy-bpf/tcp-127_0_0_1-$port /sys/fs/bpf/mmproxy-bpf/tcp-127_0_0_1-$port-netns-*"
	printf -v "PID_$i" '%s' "$pid"
	printf -v "LOG_$i" '%s' "$log"
	wait_port "$TOPO_PROXY" "$port" 10 "$pid" || {
		START_ERR="instance $i did not listen: $(grep -v libbpf "$log" | tail -n 3 | tr '\n' ' ')"
		return 1
	}
	# Outside the host's namespace the directory ends in -netns-NAME (lib/instance.c).
	printf -v "DIR_$i" '%s' "$(ls -d "/sys/fs/bpf/mmproxy-bpf/tcp-127_0_0_1-$port" \
		/sys/fs/bpf/mmproxy-bpf/tcp-127_0_0_1-"$port"-netns-* 2>/dev/null | head -n 1)"
}

# flow_start I OUT SIZE PORT_BASE: a paced flow through instance I (mmpt-bidir
# plays the load balancer and instance I's upstream). BIDIR PID in FLOW_PID_I.
flow_start() {
	local i=$1 out=$2 size=$3 pbase=$4 rate=${5:-1M}
	proc_start "FLOW_PID_$i" "$out" "$TOPO_PROXY" "$MMP_TOOLS/mmpt-bidir" -c "127.0.0.1:$((BASE + i))" \
		-l "127.0.0.1:$((UP_PORT + i))" -n 1 --size "$size" --rate "$rate" --port-base "$pbase" --timeout 30
}

# flow_check OUT SIZE WHAT: the flow's "conn" line says both directions ok.
flow_check() {
	local line
	line=$(grep '^conn ' "$1")
	[[ $line == *" up $2 ok down $2 ok"* ]] || case_fail "$3: ${line:-$(tail -n 2 "$1" | tr '\n' ' ')}"
}

# prefs_on_lo: the distinct priorities of our filters (handle 0x4d4d) on lo ingress.
prefs_on_lo() {
	tc -n "$TOPO_PROXY" filter show dev lo ingress 2>/dev/null | awk '/handle 0x4d4d/ {print $5}' | sort -u | tr '\n' ' '
}

wait_exit() { # PID: wait for a process started in the background of this shell
	local i
	for ((i = 0; i < 100; i++)); do proc_alive "$1" || break; sleep 0.1; done
	wait "$1" 2>/dev/null
}

# ---------------------------------------------------------------- case 1 --
case_begin "1 three instances with default flags in one namespace (nsenter): flows through all at once, in the kernel"
ok=1
for i in 1 2 3; do inst_start $i || { case_fail "$START_ERR"; ok=0; }; done
if ((ok)); then
	dirs=$(for d in "$DIR_1" "$DIR_2" "$DIR_3"; do [[ -n $d && -d $d ]] && echo "$d"; done | sort -u | grep -c .)
	((dirs == 3)) || case_fail "expected 3 default pin directories, found $dirs: $(ls /sys/fs/bpf/mmproxy-bpf/ | tr '\n' ' ')"
	prefs=$(prefs_on_lo)
	(($(wc -w <<<"$prefs") == 3)) || case_fail "expected 3 filter priorities on lo ingress, found: $prefs"
	for i in 1 2 3; do flow_start $i "$T_TMP/c1-$i.out" "$SIZE" $((24000 + i * 10)); done
	for i in 1 2 3; do
		log=LOG_$i
		tc_wait_spliced "${!log}" 0 "203.0.113.1:$((24000 + i * 10))" 5 ||
			case_fail "instance $i's flow was not spliced in the kernel: $TC_OUTCOME"
	done
	dir=DIR_1
	in_stats=$("$MMP_BIN" stats --pin-dir "${!dir}" 2>&1 | grep -cE "load balancer .* -> 127\.0\.0\.1:$((BASE + 1))\$")
	((in_stats > 0)) || case_fail "stats --pin-dir of instance 1 shows no flow to port $((BASE + 1))"
	out=$("$MMP_BIN" stats 2>&1)
	rc=$?
	((rc != 0)) && [[ $out == *"--pin-dir DIR"* && $out == *"--all"* ]] ||
		case_fail "stats without --pin-dir, with 3 instances: exit $rc, $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
	nall=$("$MMP_BIN" stats --all 2>&1 | grep -c '^pin directory: ')
	((nall >= 3)) || case_fail "stats --all printed $nall pin directories (expected at least 3)"
	# A fourth on instance 1's -l: refused, naming instance 1.
	out=$(ns_exec "$TOPO_PROXY" timeout 10 "$MMP_BIN" run -l "127.0.0.1:$((BASE + 1))" -4 "127.0.0.1:$((UP_PORT + 1))" \
		--engine "$MMP_ENGINE" --listeners 1 2>&1)
	rc=$?
	refusal=$(grep 'another mmproxy-bpf instance' <<<"$out")
	((rc != 0)) && [[ $refusal == *"pid $PID_1"* ]] ||
		case_fail "a second instance on instance 1's -l: exit $rc, $(grep -v libbpf <<<"$out" | tail -n 2 | tr '\n' ' ')"
	for i in 1 2 3; do
		pid=FLOW_PID_$i
		wait_exit "${!pid}"
		flow_check "$T_TMP/c1-$i.out" "$SIZE" "instance $i's flow"
	done
	case_note "pin directories: ${DIR_1##*/} ${DIR_2##*/} ${DIR_3##*/}; filter prefs on lo: $prefs; refusal: ${refusal#mmproxy-bpf: }"
fi
case_end

# ---------------------------------------------------------------- case 2 --
case_begin "2 SIGTERM one instance, SIGKILL + cleanup another, while long flows run through the first two"
if ((ok)); then
	flow_start 1 "$T_TMP/c2-1.out" "$LONG" 25000 2M
	flow_start 2 "$T_TMP/c2-2.out" "$LONG" 25100 2M
	tc_wait_spliced "$LOG_1" 0 "203.0.113.1:25000" 5 || case_fail "instance 1's long flow was not spliced: $TC_OUTCOME"
	tc_wait_spliced "$LOG_2" 0 "203.0.113.1:25100" 5 || case_fail "instance 2's long flow was not spliced: $TC_OUTCOME"
	sleep 0.5
	proc_stop "$PID_2" 10
	((PROC_STATUS == 0)) || case_fail "instance 2 exited $PROC_STATUS on SIGTERM"
	grep -q "keep running" "$LOG_2" || case_fail "instance 2 did not say its spliced flow keeps running"
	kill -KILL "$PID_3"
	wait "$PID_3" 2>/dev/null
	prefs_before=$(prefs_on_lo)
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup -l "127.0.0.1:$((BASE + 3))" 2>&1)
	rc=$?
	((rc == 0)) || case_fail "cleanup -l of the killed instance 3 exited $rc: $(tr '\n' ' ' <<<"$out")"
	[[ -n $DIR_3 && -d $DIR_3 ]] && case_fail "instance 3's pin directory is still there after cleanup"
	prefs_after=$(prefs_on_lo)
	(($(wc -w <<<"$prefs_after") == 2)) || case_fail "after instance 3's cleanup, filter prefs on lo: $prefs_after (before: $prefs_before; expected 2)"
	proc_alive "$FLOW_PID_1" || case_fail "instance 1's long flow ended before the stops (raise LONG)"
	wait_exit "$FLOW_PID_1"
	wait_exit "$FLOW_PID_2"
	flow_check "$T_TMP/c2-1.out" "$LONG" "instance 1's long flow"
	flow_check "$T_TMP/c2-2.out" "$LONG" "instance 2's long flow (its control plane stopped with SIGTERM)"
	# Instance 2's filter and pins wait for a successor; --all removes them, not instance 1's.
	sleep 3
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --all 2>&1)
	rc=$?
	((rc == 0)) || case_fail "cleanup --all exited $rc: $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
	[[ $out == *"instance is running on $DIR_1"* ]] || case_fail "cleanup --all did not skip the running instance 1: $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
	[[ -n $DIR_2 && -d $DIR_2 ]] && case_fail "instance 2's pins are still there after cleanup --all"
	# One filter left: instance 1's (it runs; the new flow below goes through it). Which priority that
	# is depends on the hash of its pin directory, so the count is checked, not the value.
	(($(wc -w <<<"$(prefs_on_lo)") == 1)) ||
		case_fail "after cleanup --all, filter prefs on lo: $(prefs_on_lo) (before: $prefs_after; expected instance 1's only)"
	flow_start 1 "$T_TMP/c2-1b.out" "$SIZE" 25200
	wait_exit "$FLOW_PID_1"
	flow_check "$T_TMP/c2-1b.out" "$SIZE" "a new flow through instance 1 after the others were gone"
	proc_stop "$PID_1" 10
	((PROC_STATUS == 0)) || case_fail "instance 1 exited $PROC_STATUS on SIGTERM"
	[[ -z $(prefs_on_lo) ]] || case_fail "filters left on lo after every instance stopped: $(prefs_on_lo)"
	[[ -n $(tc_clsact "$TOPO_PROXY") ]] && case_fail "clsact qdisc left on $(tc_clsact "$TOPO_PROXY")"
	case_note "lo prefs with 3 instances: $prefs_before; after instance 3's cleanup: $prefs_after"
else
	case_fail "case 1 did not start its instances"
fi
case_end

# ---------------------------------------------------------------- case 3 --
case_begin "3 two instances started with ip netns exec (own bpffs each, shared TC hooks): flows at once, SIGKILL of one"
if inst_start 1 ipnetns && inst_start 2 ipnetns; then
	prefs=$(prefs_on_lo)
	(($(wc -w <<<"$prefs") == 2)) || case_fail "expected 2 filter priorities on lo ingress, found: $prefs"
	flow_start 1 "$T_TMP/c3-1.out" "$LONG" 26000 2M
	flow_start 2 "$T_TMP/c3-2.out" "$SIZE" 26100
	tc_wait_spliced "$LOG_1" 0 "203.0.113.1:26000" 5 || case_fail "instance 1's flow was not spliced: $TC_OUTCOME"
	tc_wait_spliced "$LOG_2" 0 "203.0.113.1:26100" 5 || case_fail "instance 2's flow was not spliced: $TC_OUTCOME"
	out=$(timeout 10 ip netns exec "$TOPO_PROXY" "$MMP_BIN" run -l "127.0.0.1:$((BASE + 1))" \
		-4 "127.0.0.1:$((UP_PORT + 1))" --engine "$MMP_ENGINE" --listeners 1 2>&1)
	rc=$?
	refusal=$(grep 'another mmproxy-bpf instance' <<<"$out")
	((rc != 0)) && [[ $refusal == *"pid $PID_1"* ]] ||
		case_fail "a third ip netns exec instance on instance 1's -l: exit $rc, $(grep -v libbpf <<<"$out" | tail -n 2 | tr '\n' ' ')"
	wait_exit "$FLOW_PID_2"
	flow_check "$T_TMP/c3-2.out" "$SIZE" "instance 2's flow"
	kill -KILL "$PID_2"
	wait "$PID_2" 2>/dev/null
	out=$(ip netns exec "$TOPO_PROXY" "$MMP_BIN" cleanup -l "127.0.0.1:$((BASE + 2))" 2>&1)
	rc=$?
	((rc == 0)) || case_fail "cleanup -l of the killed instance 2 exited $rc: $(tr '\n' ' ' <<<"$out")"
	prefs_after=$(prefs_on_lo)
	(($(wc -w <<<"$prefs_after") == 1)) || case_fail "after instance 2's cleanup, filter prefs on lo: $prefs_after (expected instance 1's only)"
	proc_alive "$FLOW_PID_1" || case_fail "instance 1's long flow ended before the SIGKILL (raise LONG)"
	wait_exit "$FLOW_PID_1"
	flow_check "$T_TMP/c3-1.out" "$LONG" "instance 1's long flow"
	proc_stop "$PID_1" 10
	((PROC_STATUS == 0)) || case_fail "instance 1 exited $PROC_STATUS on SIGTERM"
	tc_totals "$LOG_1" && ((TOT_TC >= 1)) || case_fail "instance 1's totals count no tc flow: $(grep -m1 totals "$LOG_1")"
	[[ -z $(prefs_on_lo) ]] || case_fail "filters left on lo: $(prefs_on_lo)"
	case_note "lo prefs: $prefs; refusal: ${refusal#mmproxy-bpf: }"
else
	case_fail "$START_ERR"
fi
case_end

t_finish
