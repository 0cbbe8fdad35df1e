#!/usr/bin/env bash
# t12: spliced flows survive a control-plane restart, and what is left behind
# is removable (issue 5, "Surviving a restart").
#
#   1 restart in the middle of a 64 MiB transfer in both directions: SIGTERM,
#     then a new instance with the same --pin-dir. The first must exit 0 and
#     leave its filters and pins (a flow is alive), the second must log that
#     it adopted the flow, and the transfer must complete byte-exact without a
#     stall. Once the transfer is over (FIN both ways) and the collector had
#     time (> 3 s: entries linger 2 s), the maps are empty; after the second
#     instance's SIGTERM no pin and no TC filter (pref 19789 / handle 0x4d4d)
#     remains anywhere in the proxy namespace.
#     The transfer is mmpt-bidir (it plays the load balancer with a hand-made
#     header and the upstream) paced at RATE per direction, so that it lasts
#     a few seconds and the restart falls in its middle.
#   2 --detach: an exit with a live spliced flow still removes every filter
#     and pin.
#   3 SIGKILL with a live spliced flow: the filters and pins stay (the flow
#     keeps running); `mmproxy-bpf cleanup --pin-dir DIR` run in the same
#     network namespace (nsenter --net) refuses while an instance runs, and
#     after the crash removes every filter (lo and the veth, which the default
#     --iface hooks: every interface that is up) and every pin.
#   4 two instances in one network namespace, with their own --pin-dir,
#     listen port and upstream port (docs/USAGE.md: "one instance per directory"):
#     a flow spliced by the first keeps running when the second starts (both
#     attach to lo egress with the same handle and priority), and a flow
#     through the second works too. Each is 1 MiB each way, paced over 4 s.
#   5 a restart that fails after adopting the pins (issue 26 finding 9): a
#     64 MiB transfer both ways, paced as in 1, is spliced; SIGKILL; then a
#     start with the same --pin-dir and --iface mmp-no-such0, which adopts
#     the pins and then fails (no such interface). It must exit non-zero
#     naming the interface and leave the tc engine's pins and our filters
#     exactly as they were (the same list, the same program ids), with the
#     transfer still running. Then a start with --detach while another
#     process holds the listen port: it gets past the tc engine (its
#     filters replace ours in place) and fails at listen; --detach must not
#     remove the flow it adopted: the same pins, a filter on the same hooks.
#     Then a good start adopts the flow and the transfer completes
#     byte-exact without a stall.
# The live flows of 2 and 3 are idle connections that were echoed once
# (mmpt-client --msg ... --expect-close), so the hand-off has completed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t12 "control-plane restart"
MMP_VERBOSITY=2
t_setup t12

SIZE=$((64 << 20))
RATE=${T12_RATE:-16M} # bytes/s each way: 64 MiB take 4 s
# Case 5 makes two failed starts (each loads the BPF programs) before the
# good one: 16 s of transfer, so that a loaded host (CI at load 8 took over
# 4 s for them) still restarts while the flow runs.
RATE5=${T12_RATE5:-4M}
LISTEN="127.0.0.1:$PROXY_PORT"

# leftovers PINDIR: LEFT_SUMMARY "N pins, M filters", and the details in
# LEFT_PINS / LEFT_FILTERS (empty when none).
leftovers() {
	LEFT_PINS=$(tc_pins "$1" | tr '\n' ' ')
	LEFT_FILTERS=$(tc_our_filters "$TOPO_PROXY")
	LEFT_SUMMARY="$(tc_pins "$1" | grep -c .) pins, $(awk 'NF {print $1, $2}' <<<"$LEFT_FILTERS" | sort -u | grep -c .) hooks with our filter"
}

# idle_flow SRC_PORT: a spliced, idle flow from 203.0.113.9:SRC_PORT; its
# client (mmpt-client, PID in IDLE_PID) waits up to 60 s for a close.
idle_flow() {
	local mark
	mark=$(log_mark "$MMP_LOG")
	proc_start IDLE_PID "$T_TMP/idle-$1.out" "$TOPO_PROXY" "$MMP_TOOLS/mmpt-client" -c "$LISTEN" \
		--pp2 "203.0.113.9:$1" 203.0.113.1:443 --msg 'hello\n' --expect-close --timeout 60
	tc_wait_spliced "$MMP_LOG" "$mark" "203.0.113.9:$1" 5
}

# ---------------------------------------------------------------- case 1 --
case_begin "1 restart (SIGTERM + start, same --pin-dir) in the middle of 64 MiB both ways"
PIN=$(tc_pindir restart)
if ! tc_mmp_start "$PIN" "$LISTEN"; then
	case_fail "$MMP_START_ERR"
else
	FIRST_LOG=$MMP_LOG
	mark=$(log_mark "$MMP_LOG")
	t0=$(date +%s%N)
	out="$T_TMP/bidir-restart.out"
	tc_bidir_start "$TOPO_PROXY" "$out" -c "$LISTEN" -l "127.0.0.1:$UP_PORT" \
		-n 1 --size "$SIZE" --rate "$RATE" --net 203.0.113. --port-base 24000 --timeout 30
	if ! tc_wait_spliced "$MMP_LOG" "$mark" "203.0.113.1:24000" 5; then
		case_fail "the flow was not spliced in the kernel before the restart: $TC_OUTCOME"
	fi
	sleep 1
	# SIGTERM the first instance: it must exit 0 and keep filters and pins.
	proc_stop "$MMP_PID" 10
	MMP_RUNNING=0
	ms_stop=$((($(date +%s%N) - t0) / 1000000))
	((PROC_KILLED)) && case_fail "the first instance ignored SIGTERM for 10 s"
	((PROC_KILLED || PROC_STATUS == 0)) || case_fail "the first instance exited $PROC_STATUS on SIGTERM"
	leftovers "$PIN"
	left=$LEFT_SUMMARY
	grep -q "keep running" "$FIRST_LOG" ||
		case_fail "the first instance did not say that spliced flows keep running: $(grep -v libbpf "$FIRST_LOG" | tail -n 2 | tr '\n' ' ')"
	[[ -n $LEFT_PINS && -n $LEFT_FILTERS ]] || case_fail "with a live flow, the first instance left $left (expected its pins and filters)"
	proc_alive "$BIDIR_PID" || case_fail "the transfer ended before the restart (make RATE smaller)"
	# Start the second instance on the same pins.
	if ! tc_mmp_start "$PIN" "$LISTEN"; then
		case_fail "second instance: $MMP_START_ERR"
	else
		ms_start=$((($(date +%s%N) - t0) / 1000000))
		adopt=$(wait_log_since "$MMP_LOG" 0 "adopt" 3) ||
			case_fail "the second instance did not log an adoption: $(grep -v libbpf "$MMP_LOG" | grep -i 'tc engine' | head -n 2 | tr '\n' ' ')"
		[[ -n $adopt && $adopt != *"adopted 1 "* ]] && case_fail "expected 1 adopted flow: $adopt"
	fi
	# The transfer completes byte-exact.
	tc_bidir_wait
	ms=$((($(date +%s%N) - t0) / 1000000))
	line=$(grep '^conn ' "$out")
	[[ $line == *" up $SIZE ok down $SIZE ok" ]] ||
		case_fail "transfer: ${line:-$(tail -n 2 "$out" | tr '\n' ' ')}"
	((TC_STALLS == 0)) || case_fail "the transfer stood still for 2 s: $TC_STALL_DIAG"
	gap_down=$(sed -n 's/.*gap_down_ms \([0-9.]*\).*/\1/p' <<<"$line")
	gap_up=$(sed -n 's/.*gap_up_ms \([0-9.]*\).*/\1/p' <<<"$line")
	case_note "SIGTERM at $ms_stop ms, second instance listening at ${ms_start:-?} ms, transfer done at $ms ms; longest read gap ${gap_down:-?} ms down, ${gap_up:-?} ms up; first instance left $left; ${adopt#*tc engine: }"
	# Once the flow is over and collected, nothing is left.
	if proc_alive "$MMP_PID"; then
		sleep 3.5
		for m in mmp_tc_flows mmp_tc_tuples; do
			n=$(tc_map_count "$PIN" "$m")
			((n == 0)) || case_fail "$m has $n entries 3.5 s after the transfer ended (expected 0)"
		done
		mmp_stop
		leftovers "$PIN"
		left=$LEFT_SUMMARY
		[[ -z $LEFT_PINS ]] || case_fail "pins left after the second instance's exit: $LEFT_PINS"
		[[ -z $LEFT_FILTERS ]] || case_fail "TC filters left after the second instance's exit: $(tr '\n' ';' <<<"$LEFT_FILTERS")"
		clsact=$(tc_clsact "$TOPO_PROXY")
		[[ -z $clsact ]] || case_fail "clsact qdisc left on: $clsact (no other tool uses it here)"
	fi
fi
case_end

# ---------------------------------------------------------------- case 2 --
t_require up_start # echo, for the idle flows of cases 2 and 3
case_begin "2 --detach: exit with a live spliced flow removes every filter and pin"
PIN=$(tc_pindir detach)
if ! tc_mmp_start "$PIN" "$LISTEN" --detach; then
	case_fail "$MMP_START_ERR"
else
	idle_flow 24101 || case_fail "the idle flow was not spliced in the kernel: $TC_OUTCOME"
	leftovers "$PIN"
	before=$LEFT_SUMMARY
	proc_stop "$MMP_PID" 10
	MMP_RUNNING=0
	((PROC_KILLED || PROC_STATUS == 0)) || case_fail "exited $PROC_STATUS on SIGTERM"
	((PROC_KILLED)) && case_fail "ignored SIGTERM for 10 s"
	leftovers "$PIN"
	after=$LEFT_SUMMARY
	[[ -z $LEFT_PINS ]] || case_fail "pins left: $LEFT_PINS"
	[[ -z $LEFT_FILTERS ]] || case_fail "TC filters left: $(tr '\n' ';' <<<"$LEFT_FILTERS")"
	case_note "while running: $before; after the exit: $after"
	proc_kill "$IDLE_PID"
fi
case_end

# ---------------------------------------------------------------- case 3 --
case_begin "3 SIGKILL with a live spliced flow, then 'mmproxy-bpf cleanup' removes every filter and pin"
PIN=$(tc_pindir crash)
if ! tc_mmp_start "$PIN" "$LISTEN"; then
	case_fail "$MMP_START_ERR"
else
	idle_flow 24201 || case_fail "the idle flow was not spliced in the kernel: $TC_OUTCOME"
	# While an instance runs, cleanup must refuse (its flows would break).
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$PIN" 2>&1)
	rc=$?
	leftovers "$PIN"
	running=$LEFT_SUMMARY
	if ((rc == 0)); then
		case_fail "cleanup with the instance still running exited 0 ($(tr '\n' ' ' <<<"$out"); left: $running)"
	fi
	kill -KILL "$MMP_PID" 2>/dev/null
	wait "$MMP_PID" 2>/dev/null
	MMP_RUNNING=0
	leftovers "$PIN"
	crashed=$LEFT_SUMMARY
	[[ -n $LEFT_PINS && -n $LEFT_FILTERS ]] || case_note "after SIGKILL only $crashed were left"
	filters_before=$(awk 'NF {print $1 $2}' <<<"$LEFT_FILTERS" | sort -u | tr '\n' ' ')
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$PIN" 2>&1)
	rc=$?
	((rc == 0)) || case_fail "cleanup exited $rc: $(tr '\n' ' ' <<<"$out")"
	leftovers "$PIN"
	after=$LEFT_SUMMARY
	[[ -z $LEFT_PINS ]] || case_fail "pins left after cleanup: $LEFT_PINS"
	[[ -z $LEFT_FILTERS ]] || case_fail "TC filters left after cleanup: $(tr '\n' ';' <<<"$LEFT_FILTERS")"
	clsact=$(tc_clsact "$TOPO_PROXY")
	[[ -z $clsact ]] || case_fail "clsact qdisc left after cleanup on: $clsact (no other tool uses it here)"
	out2=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$PIN" 2>&1)
	rc2=$?
	case_note "after SIGKILL: $crashed (${filters_before% }); cleanup: $(tail -n 1 <<<"$out"); after: $after; a second cleanup exits $rc2 ($(tail -n 1 <<<"$out2"))"
	proc_kill "$IDLE_PID"
fi
case_end

# ---------------------------------------------------------------- case 4 --
case_begin "4 two instances in one namespace (own --pin-dir and ports): both instances' spliced flows work"
up_stop
PIN_A=$(tc_pindir a)
PIN_B=$(tc_pindir b)
if ! tc_mmp_start "$PIN_A" "$LISTEN"; then
	case_fail "first instance: $MMP_START_ERR"
else
	PID_A=$MMP_PID LOG_A=$MMP_LOG
	out_a="$T_TMP/bidir-a.out"
	tc_bidir_start "$TOPO_PROXY" "$out_a" -c "$LISTEN" -l "127.0.0.1:$UP_PORT" -n 1 --size 1M --rate 256K \
		--port-base 24300 --timeout 20
	BIDIR_A=$BIDIR_PID
	tc_wait_spliced "$LOG_A" 0 203.0.113.1:24300 5 || case_fail "instance A's flow was not spliced: $TC_OUTCOME"
	if ! tc_mmp_start "$PIN_B" "127.0.0.1:$((PROXY_PORT + 1))" -4 "127.0.0.1:$((UP_PORT + 1))" -6 "[::1]:$((UP_PORT + 1))"; then
		case_fail "second instance: $MMP_START_ERR"
	else
		PID_B=$MMP_PID LOG_B=$MMP_LOG
		out_b="$T_TMP/bidir-b.out"
		tc_run_bidir "$TOPO_PROXY" "$out_b" -c "127.0.0.1:$((PROXY_PORT + 1))" -l "127.0.0.1:$((UP_PORT + 1))" -n 1 \
			--size 1M --rate 256K --port-base 24400 --timeout 20
		tc_wait_spliced "$LOG_B" 0 203.0.113.1:24400 1 || case_fail "instance B's flow was not spliced: $TC_OUTCOME"
		line_b=$(grep '^conn ' "$out_b")
		[[ $line_b == *" up 1048576 ok down 1048576 ok" ]] || case_fail "instance B's flow: ${line_b:-$(tail -n 1 "$out_b")}"
	fi
	BIDIR_PID=$BIDIR_A BIDIR_OUT=$out_a
	tc_bidir_wait
	line_a=$(grep '^conn ' "$out_a")
	[[ $line_a == *" up 1048576 ok down 1048576 ok" ]] ||
		case_fail "instance A's flow, once B started: ${line_a:-$(tail -n 1 "$out_a")} ($(grep -m1 '^stall' "$out_a"))"
	case_note "A: ${line_a#* kind fin }; B: ${line_b#* kind fin }; our filters with both running: $(tc_our_filters "$TOPO_PROXY" | grep -o '^[^:]*: .*id [0-9]*' | sed 's/: .* id / prog /' | tr '\n' ',')"
	MMP_PID=$PID_B MMP_PINDIR=$PIN_B MMP_LOG=$LOG_B
	[[ -n ${PID_B:-} ]] && mmp_stop
	# B's exit must leave the clsact qdisc that still carries A's filter.
	tc -n "$TOPO_PROXY" filter show dev lo ingress 2>/dev/null | grep -q . ||
		case_fail "after instance B's exit, lo ingress has no filter left: A's filter went with B's"
	MMP_PID=$PID_A MMP_PINDIR=$PIN_A MMP_LOG=$LOG_A
	mmp_stop
fi
case_end

# ---------------------------------------------------------------- case 5 --
case_begin "5 a restart that fails after adopting the pins leaves them and the filters; the next start adopts the flow"
PIN=$(tc_pindir failed)
if ! tc_mmp_start "$PIN" "$LISTEN"; then
	case_fail "$MMP_START_ERR"
else
	mark=$(log_mark "$MMP_LOG")
	out="$T_TMP/bidir-failed.out"
	tc_bidir_start "$TOPO_PROXY" "$out" -c "$LISTEN" -l "127.0.0.1:$UP_PORT" \
		-n 1 --size "$SIZE" --rate "$RATE5" --net 203.0.113. --port-base 24500 --timeout 40
	tc_wait_spliced "$MMP_LOG" "$mark" "203.0.113.1:24500" 5 ||
		case_fail "the flow was not spliced in the kernel before the kill: $TC_OUTCOME"
	sleep 0.5
	kill -KILL "$MMP_PID" 2>/dev/null
	wait "$MMP_PID" 2>/dev/null
	MMP_RUNNING=0
	# The tc engine's pins (the allow-lists and mmp_tcp_cnt are the policy's and the process's).
	leftovers "$PIN"
	pins_before=$(tc_pins "$PIN" | grep /mmp_tc_ | tr '\n' ' ') filters_before=$LEFT_FILTERS
	# Adopts the pins, loads, then fails on the interface (user/engine/tc/tc_load.c).
	bad=$(ns_exec "$TOPO_PROXY" timeout 20 "$MMP_BIN" run -l "$LISTEN" -4 "127.0.0.1:$UP_PORT" \
		-6 "[::1]:$UP_PORT" -v 2 --pin-dir "$PIN" --engine "$MMP_ENGINE" --iface mmp-no-such0 2>&1)
	rc=$?
	((rc != 0 && rc != 124)) || case_fail "the start with --iface mmp-no-such0 exited $rc, want an error"
	grep -q 'no interface named mmp-no-such0' <<<"$bad" ||
		case_fail "no error naming the interface: $(grep -v libbpf <<<"$bad" | tail -n 2 | tr '\n' ' ')"
	leftovers "$PIN"
	pins_after=$(tc_pins "$PIN" | grep /mmp_tc_ | tr '\n' ' ')
	[[ -n $pins_before && $pins_after == "$pins_before" ]] ||
		case_fail "tc pins after the failed start: '$pins_after', before: '$pins_before'"
	[[ $LEFT_FILTERS == "$filters_before" ]] ||
		case_fail "filters after the failed start: $(tr '\n' ';' <<<"$LEFT_FILTERS") before: $(tr '\n' ';' <<<"$filters_before")"
	# A failure after the engines opened (user/cli/run.c), with --detach.
	squat=""
	proc_start squat "$T_TMP/squat.out" "$TOPO_PROXY" python3 -c \
		"import socket, time; s = socket.socket(); s.bind(('127.0.0.1', $PROXY_PORT)); s.listen(); print('bound', flush=True); time.sleep(60)"
	wait_grep "$T_TMP/squat.out" '^bound' 5 || case_fail "could not occupy the listen port: $(cat "$T_TMP/squat.out")"
	bad2=$(ns_exec "$TOPO_PROXY" timeout 20 "$MMP_BIN" run -l "$LISTEN" -4 "127.0.0.1:$UP_PORT" \
		-6 "[::1]:$UP_PORT" -v 2 --pin-dir "$PIN" --engine "$MMP_ENGINE" --detach 2>&1)
	rc=$?
	proc_kill "$squat"
	((rc != 0 && rc != 124)) || case_fail "the start on an occupied port exited $rc, want an error"
	grep -q 'adopted 1 spliced flows' <<<"$bad2" ||
		case_fail "the start on an occupied port did not get to adopt the flow: $(grep -v libbpf <<<"$bad2" | tail -n 2 | tr '\n' ' ')"
	pins_after=$(tc_pins "$PIN" | grep /mmp_tc_ | tr '\n' ' ')
	[[ $pins_after == "$pins_before" ]] ||
		case_fail "tc pins after the --detach start that failed at listen: '$pins_after', before: '$pins_before'"
	hooks_after=$(tc_our_filters "$TOPO_PROXY" | awk '{print $1, $2}' | sort -u | tr '\n' ' ')
	hooks_before=$(awk '{print $1, $2}' <<<"$filters_before" | sort -u | tr '\n' ' ')
	[[ $hooks_after == "$hooks_before" ]] ||
		case_fail "hooks with our filter after the --detach start that failed at listen: '$hooks_after', before: '$hooks_before'"
	proc_alive "$BIDIR_PID" || case_fail "the transfer ended before the good restart (make RATE smaller)"
	if ! tc_mmp_start "$PIN" "$LISTEN"; then
		case_fail "the good restart: $MMP_START_ERR"
	else
		adopt=$(wait_log_since "$MMP_LOG" 0 "adopted" 3) ||
			case_fail "the good restart did not adopt the flow: $(grep -v libbpf "$MMP_LOG" | grep -i 'tc engine' | head -n 2 | tr '\n' ' ')"
		[[ -n $adopt && $adopt != *"adopted 1 "* ]] && case_fail "expected 1 adopted flow: $adopt"
	fi
	tc_bidir_wait
	line=$(grep '^conn ' "$out")
	[[ $line == *" up $SIZE ok down $SIZE ok" ]] ||
		case_fail "transfer: ${line:-$(tail -n 2 "$out" | tr '\n' ' ')}"
	((TC_STALLS == 0)) || case_fail "the transfer stood still for 2 s: $TC_STALL_DIAG"
	case_note "failed start: $(grep -m1 'start failed after adopting' <<<"$bad" | sed 's/.*tc engine: //'); on an occupied port: $(grep -v libbpf <<<"$bad2" | grep -m1 -i 'listen\|in use' | sed 's/^mmproxy-bpf: //'); then ${adopt#*tc engine: }; ${line#* kind fin }"
	proc_alive "$MMP_PID" && mmp_stop
	leftovers "$PIN"
	[[ -z $LEFT_PINS ]] || case_fail "pins left after the last instance's exit: $LEFT_PINS"
fi
case_end

case_lifecycle
t_finish
