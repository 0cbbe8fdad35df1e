#!/usr/bin/env bash
# t20-udp-fast: the in-kernel fast path (MMP_ENGINE=tc; SKIP otherwise).
#   - established IPv4 flows are moved by the kernel: PROXY v2 both ways,
#     SPP forward only (its replies need room only userspace can make), for
#     a remote load balancer (veth, redirected into lo) and a local one (lo);
#     10,000 sequenced datagrams at 20,000/s, none lost or reordered across
#     the hand-over from userspace to the kernel;
#   - an LB ip:port reused by another client (first): the new client's
#     header-less datagrams never reach the upstream as the old client;
#   - a flow the kernel alone keeps busy stays open; once quiet it closes
#     2 to 3 s later (-c 2), its entries gone; after SIGTERM the filters
#     and pins are gone too.
source "$(dirname "$0")/udp-lib.sh"
udp_setup t20-udp-fast

if ! udp_fast; then
	case_begin "fast path"
	case_skip "runs under MMP_ENGINE=tc (the userspace relay is tested under splice)"
	t_finish
fi

now_ms() { echo $(($(date +%s%N) / 1000000)); }
N=10000

# counter_delta NAME: its increase since counters_mark.
counters_mark() { udp_counters_fresh; udp_counters >"$T_TMP/counters.before"; }
counter_delta() {
	local before
	before=$(awk -v n="$1" '$1 == n { print $2 }' "$T_TMP/counters.before")
	echo $(($(udp_counter "$1") - ${before:-0}))
}

t_require udp_up_start
t_require udp_mmp_start --udp-header auto -c 2

for spec in "v2 $PROXY4 $TOPO_CLIENT remote" "spp $PROXY4 $TOPO_CLIENT remote" "v2 127.0.0.1:$PROXY_PORT $TOPO_PROXY local"; do
	read -r fmt proxy ns where <<<"$spec"
	port=$((${port:-35000} + 1))
	case_begin "$fmt, $where load balancer: $N datagrams in order both ways, moved by the kernel after the first"
	counters_mark
	seq0=$(udp_seqerrs "$UP4_LOG")
	if udp_send "$ns" -c "$proxy" --format "$fmt" --client "203.0.113.90:$port" -n "$N" --rate 20000 --size 200 \
		--echo --timeout 20; then
		case_note "$(udp_result)"
	else
		case_fail "sender: $(udp_result)"
	fi
	(($(udp_seqerrs "$UP4_LOG") == seq0)) || case_fail "the upstream saw gaps or reordering"
	udp_counters_fresh
	fwd=$(counter_delta fast_fwd_dgrams) rev=$(counter_delta fast_reply_dgrams)
	((fwd >= N - 100)) || case_fail "the kernel forwarded $fwd of $N"
	if [[ $fmt == v2 ]]; then
		((rev >= N - 100)) || case_fail "the kernel sent $rev of $N replies"
	else
		((rev == 0)) || case_fail "the kernel sent $rev SPP replies (they need userspace)"
	fi
	((fwd + $(counter_delta fwd_dgrams) == N)) || case_fail "kernel $fwd + userspace $(counter_delta fwd_dgrams) != $N"
	case_note "kernel: $fwd forwarded, $rev replies"
	case_end
done

case_begin "first: an LB ip:port reused by another client; none of its datagrams reach the upstream as the old one"
seq0=$(udp_seqerrs "$UP4_LOG")
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format first --client 203.0.113.91:36000 --bind "$TOPO_CLIENT_IP4:45000" \
	-n 200 --rate 20000 --echo --timeout 5 || case_fail "first client: $(udp_result)"
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format first --client 203.0.113.92:36000 --bind "$TOPO_CLIENT_IP4:45000" \
	-n 200 --rate 20000 --echo --timeout 5 || case_fail "second client: $(udp_result)"
# A datagram of the second client delivered as the first would break the first one's sequence.
(($(udp_seqerrs "$UP4_LOG") == seq0)) ||
	case_fail "the upstream saw: $(grep '^seqerr' "$UP4_LOG" | tail -n +$((seq0 + 1)) | head -2 | tr '\n' ' ')"
wait_grep "$UP4_LOG" '^peer 203\.0\.113\.92 36000$' 2 || case_fail "the second client never reached the upstream"
case_end

case_begin "a flow only the kernel moves stays open while busy, then closes 2 to 3 s after it goes quiet (-c 2)"
# 3.5 s at 20/s: far longer than -c 2, every datagram after the first in the kernel.
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.93:37000 -n 70 --rate 20 --echo --timeout 6 ||
	case_fail "sender: $(udp_result)"
t1=$(now_ms)
read -r cookie _ up down _ <<<"$(udp_flows_for 203.0.113.93 37000 | head -1)"
[[ -n $cookie ]] || case_fail "the flow closed while busy"
gone=""
while (($(now_ms) - t1 < 5000)); do
	if ! udp_has_port 37000; then
		gone=$(($(now_ms) - t1))
		break
	fi
	sleep 0.02
done
if [[ -z $gone ]]; then
	case_fail "still open 5 s after its last datagram"
elif ((gone > 3000)); then
	case_fail "closed $gone ms after its last datagram"
else
	case_note "one flow for 3.5 s ($up up, $down down), gone $gone ms after the last echo"
fi
left=$(bpftool -j map dump pinned "$MMP_PINDIR/mmp_udp_fwd" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[[ $left == 0 ]] || case_fail "$left entries left in mmp_udp_fwd once every flow closed"
case_end

mmp_stop
case_begin "after SIGTERM no TC filter of ours is left on lo or the load balancer's interface"
for dev in lo veth-p; do
	left=$(ns_exec "$TOPO_PROXY" tc filter show dev "$dev" ingress 2>/dev/null | grep -c 'mmp_udp_ingress')
	((left == 0)) || case_fail "$left filters left on $dev"
done
case_end

case_lifecycle
t_finish
