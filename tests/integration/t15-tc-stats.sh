#!/usr/bin/env bash
# t15: what an operator sees of spliced flows, and the idle policy (issue 5,
# "Visibility" and "Idle flows").
#
#   1/2 `mmproxy-bpf stats --pin-dir DIR`, while a spliced flow is alive
#     (IPv4, then IPv6), shows it: the load balancer's 4-tuple and the
#     upstream's, the seq deltas (equal to those in the proxy's -v 2
#     "spliced in the kernel ... (seq +A/+B ...)" line), and packets and bytes
#     per direction, non-zero and growing between two samples 1 s apart. The
#     flow is mmpt-bidir (both ends) paced at RATE each way; the load
#     balancer's port comes from the proxy's "PROXY v2 header from" line.
#     bpftool map dump pinned DIR/mmp_tc_flows lists the flow too.
#   3 --tc-idle-timeout 2: an idle spliced flow (one echo, then nothing) is
#     forgotten within a few seconds, while a flow with steady traffic over
#     the same time is kept and completes byte-exact ("never resets an
#     active flow").
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t15 "stats and idle timeout"
MMP_VERBOSITY=2
t_setup t15

RATE=256K
SIZE=1M # 4 s each way at RATE

# stats_flow LBPORT: the `stats` block (6 lines) of the flow whose load
# balancer port is LBPORT, in STATS_BLOCK; its counters in ST_UP_PKTS,
# ST_UP_BYTES, ST_DOWN_PKTS, ST_DOWN_BYTES, deltas ST_UP_SEQ, ST_DOWN_SEQ.
stats_flow() {
	local lbport=$1 all
	all=$("$MMP_BIN" stats --pin-dir "$MMP_PINDIR" 2>&1)
	STATS_ALL=$all
	STATS_BLOCK=$(grep -B1 -A4 -E "load balancer .*:$lbport -> " <<<"$all")
	read -r ST_UP_SEQ ST_UP_PKTS ST_UP_BYTES <<<"$(sed -n 's/^ *up: *seq \([-+0-9]*\) .* \([0-9]*\) packets \([0-9]*\) bytes.*/\1 \2 \3/p' <<<"$STATS_BLOCK")"
	read -r ST_DOWN_SEQ ST_DOWN_PKTS ST_DOWN_BYTES <<<"$(sed -n 's/^ *down: *seq \([-+0-9]*\) .* \([0-9]*\) packets \([0-9]*\) bytes.*/\1 \2 \3/p' <<<"$STATS_BLOCK")"
}

# s32 N: an unsigned 32-bit number as the signed value `stats` prints (%+d).
s32() { local v=$(($1 & 0xffffffff)); ((v >= 2147483648)) && v=$((v - 4294967296)); printf '%+d' "$v"; }

# stats_case NAME LISTEN UPSTREAM NET LB_ADDR CLIENT_ADDR
stats_case() {
	local name=$1 listen=$2 uplisten=$3 net=$4 lbaddr=$5 caddr=$6
	local out="$T_TMP/stats-$MMP_STARTS.out" client lbport line up_delta down_delta p1="" b1="" p2="" b2="" dumped
	case_begin "$name"
	if ! tc_mmp_start "$(tc_pindir "s$MMP_STARTS")" "$listen"; then
		case_fail "$MMP_START_ERR"
		case_end
		return
	fi
	client="$(hostport "$caddr" 26000)"
	tc_bidir_start "$TOPO_PROXY" "$out" -c "$listen" -l "$uplisten" -n 1 --size "$SIZE" --rate "$RATE" \
		--net "$net" --port-base 26000 --timeout 30
	if ! tc_wait_spliced "$MMP_LOG" 0 "$client" 5; then
		case_fail "the flow was not spliced in the kernel: $TC_OUTCOME"
	else
		line=$(grep -F "client $client spliced in the kernel" "$MMP_LOG")
		read -r up_delta down_delta <<<"$(sed -n 's/.*(seq +\([0-9]*\)\/+\([0-9]*\),.*/\1 \2/p' <<<"$line")"
		lbport=$(grep -F "PROXY v2 header from" "$MMP_LOG" | grep -F "client $client" | sed -n 's/.*from .*:\([0-9]*\): client.*/\1/p' | head -n 1)
		sleep 1
		stats_flow "$lbport"
		p1="$ST_UP_PKTS/$ST_DOWN_PKTS" b1="$ST_UP_BYTES/$ST_DOWN_BYTES"
		if [[ -z $STATS_BLOCK ]]; then
			case_fail "stats does not show a flow with load balancer port $lbport: $(tr -s ' \n' ' ' <<<"$STATS_ALL" | cut -c1-600)"
		else
			grep -Fq "load balancer $(hostport "$lbaddr" "$lbport") -> $listen" <<<"$STATS_BLOCK" ||
				case_fail "no 'load balancer $(hostport "$lbaddr" "$lbport") -> $listen' line: $(tr -s ' \n' ' ' <<<"$STATS_BLOCK")"
			grep -Fq "upstream      $client -> $uplisten" <<<"$STATS_BLOCK" ||
				case_fail "no 'upstream $client -> $uplisten' line: $(tr -s ' \n' ' ' <<<"$STATS_BLOCK")"
			[[ $ST_UP_SEQ == "$(s32 "$up_delta")" && $ST_DOWN_SEQ == "$(s32 "$down_delta")" ]] ||
				case_fail "seq deltas: stats $ST_UP_SEQ/$ST_DOWN_SEQ, log +$up_delta/+$down_delta ($(s32 "$up_delta")/$(s32 "$down_delta"))"
			((${ST_UP_PKTS:-0} > 0 && ${ST_DOWN_PKTS:-0} > 0 && ${ST_UP_BYTES:-0} > 0 && ${ST_DOWN_BYTES:-0} > 0)) ||
				case_fail "packets/bytes per direction not all > 0 after 1 s of traffic: up $ST_UP_PKTS/$ST_UP_BYTES, down $ST_DOWN_PKTS/$ST_DOWN_BYTES"
			sleep 1
			stats_flow "$lbport"
			p2="$ST_UP_PKTS/$ST_DOWN_PKTS" b2="$ST_UP_BYTES/$ST_DOWN_BYTES"
			((${ST_UP_BYTES:-0} > ${b1%/*} && ${ST_DOWN_BYTES:-0} > ${b1#*/})) ||
				case_fail "bytes did not grow in 1 s: up ${b1%/*} -> $ST_UP_BYTES, down ${b1#*/} -> $ST_DOWN_BYTES"
		fi
		dumped=$(tc_map_count "$MMP_PINDIR" mmp_tc_flows)
		((dumped == 1)) || case_fail "bpftool map dump pinned $MMP_PINDIR/mmp_tc_flows: $dumped entries, expected 1"
		case_note "packets up/down $p1 -> $p2, bytes $b1 -> $b2; $(grep -E '^ *(up|down):' <<<"$STATS_BLOCK" | sed 's/^ *//' | tr -s ' \n' ' ')"
	fi
	tc_bidir_wait
	line=$(grep '^conn ' "$out")
	[[ $line == *" ok down $((1 << 20)) ok" ]] || case_fail "transfer: ${line:-$(tail -n 1 "$out")}"
	mmp_stop
	case_end
}

stats_case "1 IPv4: stats shows a live spliced flow: both 4-tuples, deltas, packets/bytes per direction" \
	"127.0.0.1:$PROXY_PORT" "127.0.0.1:$UP_PORT" 203.0.113. 127.0.0.1 203.0.113.1
stats_case "2 IPv6: stats shows a live spliced flow: both 4-tuples, deltas, packets/bytes per direction" \
	"[::1]:$PROXY_PORT" "[::1]:$UP_PORT" 2001:db8:5:: ::1 2001:db8:5::1

# ---------------------------------------------------------------- case 3 --
case_begin "3 --tc-idle-timeout 2: an idle spliced flow is forgotten, an active one is kept"
if ! tc_mmp_start "$(tc_pindir idle)" "127.0.0.1:$PROXY_PORT" --tc-idle-timeout 2; then
	case_fail "$MMP_START_ERR"
else
	# Connection 0 is idle after one byte from the upstream; connection 1
	# carries 320 KiB each way at 64 KiB/s: 5 s of steady traffic.
	out="$T_TMP/idle.out"
	tc_bidir_start "$TOPO_PROXY" "$out" -c "127.0.0.1:$PROXY_PORT" -l "127.0.0.1:$UP_PORT" -n 2 --parallel 2 \
		--idle 1 --size 320K --rate 64K --port-base 27000 --timeout 12 --stall-report-ms 0
	tc_wait_spliced "$MMP_LOG" 0 203.0.113.1:27000 5 || case_fail "the idle flow was not spliced: $TC_OUTCOME"
	tc_wait_spliced "$MMP_LOG" 0 203.0.113.2:27000 5 || case_fail "the active flow was not spliced: $TC_OUTCOME"
	idle_lb=$(grep -F "client 203.0.113.1:27000" "$MMP_LOG" | sed -n 's/.*from .*:\([0-9]*\): client.*/\1/p' | head -n 1)
	active_lb=$(grep -F "client 203.0.113.2:27000" "$MMP_LOG" | sed -n 's/.*from .*:\([0-9]*\): client.*/\1/p' | head -n 1)
	stats_flow "$idle_lb"
	[[ -n $STATS_BLOCK ]] || case_fail "the idle flow is not in stats right after the hand-off"
	# Idle 2 s, collected within about a second more.
	gone=""
	for ((i = 0; i < 50; i++)); do
		sleep 0.1
		stats_flow "$idle_lb"
		[[ -z $STATS_BLOCK ]] && gone=$(((i + 1) * 100)) && break
	done
	[[ -n $gone ]] || case_fail "the idle flow is still in the maps 5 s after the hand-off"
	stats_flow "$active_lb"
	[[ -n $STATS_BLOCK ]] || case_fail "the active flow was removed as idle (it sends every millisecond)"
	while proc_alive "$BIDIR_PID" && ! grep -q '^conn 1 ' "$out"; do sleep 0.2; done
	line=$(grep '^conn 1 ' "$out")
	[[ $line == *" up 327680 ok down 327680 ok" ]] || case_fail "the active flow: ${line:-$(tail -n 1 "$out")}"
	proc_kill "$BIDIR_PID"
	case_note "idle flow gone from the maps ${gone:-?} ms after its hand-off; the active flow: ${line#* ms }"
	mmp_stop
fi
case_end

case_lifecycle
t_finish
