#!/usr/bin/env bash
# t17: --tc-handoff-delay (default 20 ms; the rest of the suite runs with 0 so
# that every flow exercises the tc engine, see MMP_TC_HANDOFF_DELAY in lib.sh).
#
# A new flow runs on splice for the delay before its hand-off starts: the
# hand-off holds the flow for a few round trips, which a connection that ends
# within milliseconds pays without ever gaining from the kernel path.
#
# Asserted, with delays long enough for 2 noisy shared cores:
#   1. 40 short flows (4 KiB each way, closed at once) with a 300 ms delay are
#      byte-exact, none reached the tc maps, and the exit totals count all 40
#      as "tc short" and none as "tc";
#   2. with a 1000 ms delay, a 4 s flow is not in mmp_tc_flows 300 ms after it
#      started, is there (spliced in the kernel) after 2 s, and ends byte-exact.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t17 "hand-off delay"
MMP_VERBOSITY=2 # the per-flow hand-off lines
t_setup t17

N_SHORT=40
LISTEN="127.0.0.1:$PROXY_PORT"

case_begin "1 flows shorter than --tc-handoff-delay 300 stay on splice, counted as tc short"
if tc_mmp_start "$(tc_pindir short)" "$LISTEN" --tc-handoff-delay 300; then
	out="$T_TMP/short.out"
	tc_run_bidir "$TOPO_PROXY" "$out" -c "$LISTEN" -l "127.0.0.1:$UP_PORT" -n "$N_SHORT" --parallel 4 \
		--size 4K --port-base 31000 --timeout 10 --max-failures 4
	ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
	((ok == N_SHORT)) || case_fail "$ok of $N_SHORT flows byte-exact ($(tail -n 1 "$out"))"
	flows=$(tc_map_count "$MMP_PINDIR" mmp_tc_flows)
	((flows == 0)) || case_fail "mmp_tc_flows holds $flows entries: short flows reached the tc engine"
	mmp_stop
	if tc_totals; then
		((TOT_TC_SHORT == N_SHORT)) || case_fail "tc short $TOT_TC_SHORT, expected $N_SHORT"
		((TOT_TC == 0)) || case_fail "$TOT_TC flows spliced in the kernel, expected 0"
		case_note "$ok/$N_SHORT exact; totals: tc $TOT_TC, tc short $TOT_TC_SHORT, ineligible $TOT_TC_INELIGIBLE"
	else
		case_fail "no totals line in the proxy's log"
	fi
	MMP_LOG=""
else
	case_fail "$MMP_START_ERR"
fi
case_end

case_begin "2 a long flow is handed to the kernel after --tc-handoff-delay 1000, not before"
if tc_mmp_start "$(tc_pindir long)" "$LISTEN" --tc-handoff-delay 1000; then
	out="$T_TMP/long.out"
	mark=$(log_mark "$MMP_LOG")
	# 2 MiB each way at 512 KiB/s: about 4 s.
	tc_bidir_start "$TOPO_PROXY" "$out" -c "$LISTEN" -l "127.0.0.1:$UP_PORT" -n 1 --size 2M --rate 512K \
		--port-base 32000 --timeout 20
	sleep 0.3
	early=$(tc_map_count "$MMP_PINDIR" mmp_tc_flows)
	sleep 1.7
	late=$(tc_map_count "$MMP_PINDIR" mmp_tc_flows)
	tc_bidir_wait
	ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
	((ok == 1)) || case_fail "the flow was not byte-exact both ways ($(tail -n 2 "$out" | tr '\n' ' '))"
	((early == 0)) || case_fail "mmp_tc_flows held $early entries 300 ms in: the hand-off did not wait"
	((late == 1)) || case_fail "mmp_tc_flows held $late entries 2 s in, expected the flow"
	tc_outcomes "$MMP_LOG" "$mark"
	((OC_SPLICED == 1)) || case_fail "$OC_SPLICED flows spliced in the kernel (first other outcome: ${OC_FIRST_OTHER:-none})"
	case_note "tc flows at 0.3 s: $early, at 2 s: $late; exact: $ok"
	mmp_stop
else
	case_fail "$MMP_START_ERR"
fi
case_end

case_lifecycle
t_finish
