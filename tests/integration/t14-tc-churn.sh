#!/usr/bin/env bash
# t14: churn through the tc engine (issue 5: "20,000 flows, FIN and RST
# mixed. The maps end empty, with no stray TC filters").
#
# mmpt-bidir plays both ends (the load balancer with a hand-made v2 header,
# and the upstream): 20,000 connections, at most PARALLEL at a time, each
# exchanging SIZE bytes both ways and closing HOLD_MS after it started, so
# that the hand-off (microseconds to a few ms) is over and the close travels
# through the TC programs:
#   i % 4 = 0, 1  FIN both ways (each end shuts down, then closes);
#   i % 4 = 2     the load balancer resets (SO_LINGER {1, 0});
#   i % 4 = 3     the upstream resets.
# Every claimed client (203.0.113.1-200 x ports 30000-30099) is unique.
# (t09 runs a churn on every engine, closing right after an echo, which races
# the hand-off; this one is about spliced flows ending.)
#
# Afterwards, once the collector had time (entries linger 2 s after FIN+FIN or
# RST; at least 3 s), mmp_tc_flows and mmp_tc_tuples are empty,
# the proxy's fd count is back to its baseline, and after SIGTERM no pin and
# no TC filter of ours is left in the proxy namespace. Must take < 2 minutes.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t14 "churn"
MMP_VERBOSITY=1 # 20,000 flows: the totals line, not a line per state change
t_setup t14

N=${T14_FLOWS:-20000}
PARALLEL=64
SIZE=4K
HOLD_MS=40 # above a loaded machine's hand-off time, so that few flows close during theirs
LIMIT_S=120
SETTLE_MIN_S=3
SETTLE_MAX_S=10
TC_MAPS=(mmp_tc_flows mmp_tc_tuples)

# maps_summary: "mmp_tc_flows=0 ..." and their total in MAPS_TOTAL.
maps_summary() {
	local m n out=""
	MAPS_TOTAL=0
	for m in "${TC_MAPS[@]}"; do
		n=$(tc_map_count "$MMP_PINDIR" "$m")
		((n < 0)) && MAPS_TOTAL=$((MAPS_TOTAL + 1000000)) && n=unreadable
		[[ $n == unreadable ]] || MAPS_TOTAL=$((MAPS_TOTAL + n))
		out+="$m=$n "
	done
	MAPS_SUMMARY=${out% }
}

t_require tc_mmp_start "$(tc_pindir 1)" "127.0.0.1:$PROXY_PORT" --listeners 1

case_begin "1 $N spliced flows, FIN and RST from both sides, all byte-exact"
out="$T_TMP/churn.out"
# Baseline fd count: after one flow, so lazy allocations are done.
tc_run_bidir "$TOPO_PROXY" "$T_TMP/warmup.out" -c "127.0.0.1:$PROXY_PORT" -l "127.0.0.1:$UP_PORT" -n 1 \
	--size "$SIZE" --hold-ms "$HOLD_MS" --port-base 29000 --timeout 10
sleep 0.3
base=$(mmp_fds)
tc_nstat "$TOPO_PROXY" NS0
t0=$(date +%s%N)
tc_run_bidir "$TOPO_PROXY" "$out" -c "127.0.0.1:$PROXY_PORT" -l "127.0.0.1:$UP_PORT" -n "$N" \
	--parallel "$PARALLEL" --size "$SIZE" --close mix --hold-ms "$HOLD_MS" --net 203.0.113. --hosts 200 \
	--port-base 30000 --timeout 20 --max-failures 50
ms=$((($(date +%s%N) - t0) / 1000000))
tc_nstat_delta "$TOPO_PROXY" NS0
ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
kinds=$(grep '^conn ' "$out" | awk '{print $6}' | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')
((ok == N)) || case_fail "$ok of $N flows exact ($(tail -n 1 "$out"); e.g. $(grep '^conn ' "$out" | grep -v ' ok down [0-9]* ok$' | head -2 | tr '\n' ';'))"
((TC_STALLS == 0)) || case_fail "$TC_STALLS flows stood still for 2 s (first: $TC_STALL_DIAG)"
((ms < LIMIT_S * 1000)) || case_fail "took $ms ms (limit $LIMIT_S s)"
case_note "$ok/$N exact (${kinds%, }) in $ms ms; TCP: $NSTAT_STR"
case_end

case_begin "2 the tc maps are empty once the collector ran; fds back to the baseline"
waited=0
sleep "$SETTLE_MIN_S"
waited=$SETTLE_MIN_S
maps_summary
while ((MAPS_TOTAL > 0 && waited < SETTLE_MAX_S)); do
	sleep 1
	waited=$((waited + 1))
	maps_summary
done
((MAPS_TOTAL == 0)) || {
	case_fail "after $waited s: $MAPS_SUMMARY"
	# What is left, in the proxy's words (a few flows).
	case_fail "left: $("$MMP_BIN" stats --pin-dir "$MMP_PINDIR" 2>&1 | sed -n '/^tc flows/,$p' | head -n 8 | tr -s ' \n' ' ' | cut -c1-500)"
}
fds=$(mmp_fds)
((fds <= base + 16)) || case_fail "the proxy holds $fds fds, baseline $base"
case_note "after $waited s: $MAPS_SUMMARY; fds $fds (baseline $base); translated $(tc_counter "$MMP_PINDIR" packets_translated) packets"
case_end

case_begin "3 every flow went through the tc engine; nothing left after exit"
mmp_stop
if tc_totals; then
	# The warm-up flow is counted too.
	((TOT_ACCEPTED == N + 1)) || case_fail "accepted $TOT_ACCEPTED, expected $((N + 1))"
	((TOT_TC + TOT_TC_INELIGIBLE + TOT_TC_ABORTED + TOT_TC_SHORT >= N + 1)) ||
		case_fail "only $((TOT_TC + TOT_TC_INELIGIBLE + TOT_TC_ABORTED + TOT_TC_SHORT)) of $((N + 1)) flows tried the tc engine"
	# A hand-off slower than HOLD_MS meets the close and is aborted (the
	# flow then finishes on splice, byte-exact): allowed, but not many.
	((TOT_TC * 100 >= (N + 1) * 95)) ||
		case_fail "only $TOT_TC of $((N + 1)) flows spliced in the kernel (ineligible $TOT_TC_INELIGIBLE, aborted $TOT_TC_ABORTED, short $TOT_TC_SHORT)"
	case_note "tc $TOT_TC, ineligible $TOT_TC_INELIGIBLE, aborted $TOT_TC_ABORTED, short $TOT_TC_SHORT of $TOT_ACCEPTED"
else
	case_fail "no totals line in the proxy's log"
fi
filters=$(tc_our_filters "$TOPO_PROXY")
[[ -z $filters ]] || case_fail "TC filters left: $(tr '\n' ';' <<<"$filters")"
pins=$(tc_pins "$MMP_PINDIR" | tr '\n' ' ')
[[ -z $pins ]] || case_fail "pins left: $pins"
clsact=$(tc_clsact "$TOPO_PROXY")
[[ -z $clsact ]] || case_fail "clsact qdisc left on: $clsact (no other tool uses it here)"
MMP_LOG=""
case_end

case_lifecycle
t_finish
