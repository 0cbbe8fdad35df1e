#!/usr/bin/env bash
# t31-udp-formats: each header format (every = udppp, first = Spectrum,
# spp = Cloudflare SPP), IPv4 and IPv6 load balancers and clients:
#   - the upstream sees the client's own ip:port;
#   - replies reach the right client through the load balancer side, without
#     a header for PROXY v2 and with the client's exact SPP header for spp,
#     from the address the load balancer sent to (the proxy listens on [::]);
#   - 10,000 sequenced datagrams at 20,000/s arrive in order, none lost, both
#     ways (the upstream checks the forward order, the sender the echoes).
# Then auto mode with all three senders on one proxy, a v2 LOCAL health
# check, and an IPv4 client through an IPv6 load balancer.
source "$(dirname "$0")/udp-lib.sh"
udp_setup t31-udp-formats

N=10000
RATE=20000

# one_format MODE FORMAT FAMILY PORT_BASE: the two cases for one format and family.
one_format() {
	local mode=$1 fmt=$2 fam=$3 base=$4 proxy client ip log up
	if [[ $fam == 4 ]]; then
		proxy=$PROXY4 ip=203.0.113.10 client="203.0.113.10:$base" log=$UP4_LOG
	else
		proxy=$PROXY6 ip=2001:db8::10 client="[2001:db8::10]:$base" log=$UP6_LOG
	fi

	case_begin "$mode IPv$fam: the upstream sees each client's ip:port; replies come back to the right client"
	if udp_send "$TOPO_CLIENT" -c "$proxy" --format "$fmt" --client "$client" --clients 3 -n 5 --echo --timeout 5; then
		case_note "$(udp_result)"
	else
		case_fail "sender: $(udp_result)"
	fi
	for i in 0 1 2; do
		up=$((base + i))
		wait_grep "$log" "^peer $ip $up\$" 2 || case_fail "upstream never saw $ip:$up ($(grep -c '^peer' "$log") peers seen)"
	done
	case_end

	case_begin "$mode IPv$fam: $N datagrams at $RATE/s, none lost or reordered either way"
	local seqerr0 many="$ip:$((base + 100))"
	[[ $fam == 6 ]] && many="[$ip]:$((base + 100))"
	seqerr0=$(udp_seqerrs "$log")
	udp_send "$TOPO_CLIENT" -c "$proxy" --format "$fmt" --client "$many" -n "$N" --rate "$RATE" --size 200 \
		--echo --timeout 20
	if [[ $UDP_ECHOED == "$N" && $UDP_MISSING == 0 && $UDP_REORDERED == 0 && $UDP_BAD == 0 ]]; then
		case_note "$(udp_result)"
	else
		case_fail "sender: $(udp_result)"
	fi
	(($(udp_seqerrs "$log") == seqerr0)) || case_fail "upstream saw gaps or reordering: $(grep '^seqerr' "$log" | tail -2 | tr '\n' ' ')"
	case_end
}

t_require udp_up_start

t_require udp_mmp_start --udp-header every
one_format every v2 4 20000
one_format every v2 6 20000
mmp_stop

if is_bpf; then
	t_require udp_mmp_start --udp-header first
	one_format first first 4 21000
	one_format first first 6 21000
	mmp_stop

	t_require udp_mmp_start --udp-header spp
	one_format spp spp 4 22000
	one_format spp spp 6 22000
	mmp_stop

	# auto: one proxy, the three framings from three load balancers at once.
	t_require udp_mmp_start --udp-header auto
	case_begin "auto: v2 on every datagram, v2 on the first only and SPP, side by side"
	pids=()
	for spec in "v2 203.0.113.20:23000" "first 203.0.113.21:23000" "spp 203.0.113.22:23000"; do
		read -r fmt client <<<"$spec"
		ns_exec "$TOPO_CLIENT" "$UDP_TOOL" send -c "$PROXY4" --format "$fmt" --client "$client" --clients 20 \
			-n 200 --rate 4000 --echo --timeout 10 >"$T_TMP/auto-$fmt.out" 2>&1 &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid"
	done
	for fmt in v2 first spp; do
		grep -q 'echoed 4000 missing 0 reordered 0 bad 0' "$T_TMP/auto-$fmt.out" ||
			case_fail "$fmt: $(head -1 "$T_TMP/auto-$fmt.out")"
	done
	case_note "3 x 20 clients x 200 datagrams echoed in order"
	case_end

	# A v2 LOCAL header (health check) is forwarded from the proxy's own address.
	case_begin "auto: a PROXY v2 LOCAL datagram is forwarded unspoofed and answered"
	mark=$(log_mark "$UP4_LOG")
	if udp_send "$TOPO_CLIENT" -c "$PROXY4" --format local -n 3 --echo --timeout 5; then
		log_since "$UP4_LOG" "$mark" | grep -q '^peer 127\.0\.0\.1 ' ||
			case_fail "the upstream did not see the proxy's own address: $(log_since "$UP4_LOG" "$mark" | head -2)"
	else
		case_fail "sender: $(udp_result)"
	fi
	case_end

	# Mixed families: an IPv4 client behind an IPv6 load balancer goes to -4.
	case_begin "every-style header for an IPv4 client through an IPv6 load balancer goes to the IPv4 upstream"
	if udp_send "$TOPO_CLIENT" -c "$PROXY6" --format v2 --client 203.0.113.30:24000 -n 5 --echo --timeout 5; then
		wait_grep "$UP4_LOG" '^peer 203\.0\.113\.30 24000$' 2 || case_fail "the IPv4 upstream never saw 203.0.113.30:24000"
	else
		case_fail "sender: $(udp_result)"
	fi
	case_end
	mmp_stop
else
	case_begin "first, spp, auto, LOCAL and mixed-family cases"
	case_skip "go-mmproxy only has PROXY v2 on every datagram"
fi

case_lifecycle
t_finish
