#!/usr/bin/env bash
# t32-udp-edges: what real traffic brings besides 1200-byte datagrams.
#   - payloads of 0, 16, 1472, 2000, 9000 and 60000 bytes, both ways, in
#     order: empty datagrams, IP fragments on the 1500-byte veth, and reply
#     trains the kernel refuses to send as one GSO train (over the MTU);
#   - a wildcard listener (0.0.0.0, then [::]) with two addresses on the
#     load balancer's side: replies leave from the address each load
#     balancer sent to (its connected socket drops anything else);
#   - -m: the upstream sockets carry SO_MARK.
source "$(dirname "$0")/udp-lib.sh"
udp_setup t32-udp-edges

# A second proxy address on the load balancer's side, both families.
ALT4=198.51.100.3
ALT6=2001:db8:1::3
ip -n "$TOPO_PROXY" addr add "$ALT4/24" dev veth-p || exit 1
ip -n "$TOPO_PROXY" addr add "$ALT6/64" dev veth-p nodad || exit 1

t_require udp_up_start
t_require udp_mmp_start --udp-header auto -m 123

port=33000
for fmt in v2 spp; do
	for proxy in "$PROXY4" "$PROXY6"; do
		case_begin "$fmt via $proxy: payloads of 0 to 60000 bytes echoed in order (fragments, refused GSO trains)"
		for size in 0 16 1472 2000 9000 60000; do
			port=$((port + 1))
			if [[ $proxy == "$PROXY4" ]]; then client="203.0.113.70:$port"; else client="[2001:db8::70]:$port"; fi
			udp_send "$TOPO_CLIENT" -c "$proxy" --format "$fmt" --client "$client" -n 20 --size "$size" --echo \
				--timeout 5 || case_fail "size $size: $(udp_result)"
		done
		case_end
	done
done

case_begin "-m 123: the upstream sockets carry SO_MARK 0x7b"
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.71:34000 -n 1 --echo --timeout 3 ||
	case_fail "sender: $(udp_result)"
line=$(ns_exec "$TOPO_PROXY" ss -uanep 'sport = :34000' | grep '203\.0\.113\.71:34000')
grep -q 'fwmark:0x7b' <<<"$line" || case_fail "no fwmark:0x7b on the flow's socket: ${line:-no socket}"
case_end
mmp_stop

for listen in "0.0.0.0:$PROXY_PORT" "[::]:$PROXY_PORT"; do
	t_require udp_mmp_start --udp-header every -l "$listen"
	case_begin "listening on $listen: replies leave from the address each load balancer sent to"
	targets=("$TOPO_PROXY_IP4:$PROXY_PORT" "$ALT4:$PROXY_PORT")
	[[ $listen == \[* ]] && targets+=("[$TOPO_PROXY_IP6]:$PROXY_PORT" "[$ALT6]:$PROXY_PORT")
	for t in "${targets[@]}"; do
		port=$((port + 1))
		udp_send "$TOPO_CLIENT" -c "$t" --format v2 --client "203.0.113.72:$port" -n 10 --echo --timeout 3 ||
			case_fail "to $t: $(udp_result)"
	done
	case_note "${#targets[@]} proxy addresses"
	case_end
	mmp_stop
done

case_lifecycle
t_finish
