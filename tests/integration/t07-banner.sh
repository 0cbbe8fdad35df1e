#!/usr/bin/env bash
# t07: the upstream speaks first (an SMTP-style banner), on every engine.
#
# mmpt-upstream --banner writes "220 ready\r\n" the moment it accepts, before
# reading anything. The client sends nothing after the PROXY header (HAProxy
# sends the header by itself) until it has the whole banner, which must arrive
# within 1 s; then a request must be echoed as usual.
#
# Regression (docs/DESIGN.md §3a item 4): with the sockmap engine, bytes queued on a
# socket before it was inserted into the SOCKHASH are only processed when
# something else arrives (a "kick"). The banner often reaches the proxy's
# upstream socket before the hand-off, and nothing else arrives from that side:
# without a working kick the client waits forever. Whether the banner wins the
# race with the insertion varies: with the kick disabled, about a third of the
# connections stalled here, so each case runs ROUNDS rounds (such a build
# failed all five cases).
source "$(dirname "$0")/lib.sh"
t_setup t07

BANNER='220 ready\r\n'
ROUNDS=20
LIMIT_MS=1000

t_require up_start --banner "$BANNER"
t_require mmp_start
t_require hap_start

# banner_case NAME NS TARGET UPLOG WANT ARGS_FN: ROUNDS connections from NS to
# TARGET. WANT is who the upstream (log UPLOG) must see: "client" (the
# client's own address, behind HAProxy) or "ADDR BASEPORT" (a claimed client,
# port BASEPORT + round). ARGS_FN R prints the client's header arguments for
# round R.
banner_case() {
	local name=$1 ns=$2 target=$3 log=$4 want=$5 argsfn=$6 r args bms ems max_b=0 max_e=0 ok=0
	case_begin "$name"
	for ((r = 1; r <= ROUNDS; r++)); do
		read -ra args <<<"$($argsfn "$r")"
		up_marks
		local mark
		[[ $log == "$UP4_LOG" ]] && mark=$UP4_MARK || mark=$UP6_MARK
		NCONNS=$((NCONNS + 1))
		if ! client "$ns" -c "$target" "${args[@]}" --expect-banner "$BANNER" \
			--msg "EHLO client$r.example\r\n" --timeout 2; then
			case_fail "round $r: $(client_result)"
			break
		fi
		bms=$(awk '/^banner ok/ {print $3}' <<<"$CLIENT_OUT")
		ems=$(awk '/^echo ok/ {print $3}' <<<"$CLIENT_OUT")
		if [[ -z $bms ]]; then
			case_fail "round $r: no banner line: $(client_result)"
			break
		fi
		((bms > max_b)) && max_b=$bms
		((ems > max_e)) && max_e=$ems
		if ((bms > LIMIT_MS)); then
			case_fail "round $r: the banner took $bms ms (limit $LIMIT_MS ms)"
		fi
		# The right client reached the upstream (the claimed one, or the
		# real client behind HAProxy).
		if [[ $want == client ]]; then
			expect_peer "$log" "$mark" "$CLIENT_LOCAL_ADDR" "$CLIENT_LOCAL_PORT" || break
		else
			expect_peer "$log" "$mark" "${want% *}" "$((${want#* } + r))" || break
		fi
		ok=$((ok + 1))
	done
	case_note "$ok/$ROUNDS rounds, banner within max $max_b ms (limit $LIMIT_MS), echo max $max_e ms"
	case_end
}

NCONNS=0 # connections made, for case_engine_used
# shellcheck disable=SC2317 # these are called through banner_case's ARGS_FN
no_args() { :; }
# Hand-made headers: a fresh claimed port per round (unique ip:port, so a
# TIME_WAIT never gets in the way); base port 21000 + round.
# shellcheck disable=SC2317
v2_args4() { echo "--pp2 203.0.113.7:$((21000 + $1)) 203.0.113.1:25"; }
# shellcheck disable=SC2317
v2_args6() { echo "--pp2 [2001:db8:7::7]:$((21000 + $1)) [2001:db8:7::1]:25"; }
# shellcheck disable=SC2317
v1_args4() { echo "--pp1 203.0.113.8:$((21000 + $1)) 203.0.113.1:25"; }

banner_case "1 banner first, HAProxy send-proxy-v2, IPv4 client" "$TOPO_CLIENT" \
	"$TOPO_PROXY_IP4:$HAP_V2_PORT" "$UP4_LOG" client no_args
banner_case "1b banner first, HAProxy send-proxy-v2, IPv6 client" "$TOPO_CLIENT" \
	"[$TOPO_PROXY_IP6]:$HAP_V2_PORT" "$UP6_LOG" client no_args
banner_case "2 banner first, hand-made v2 header, IPv4" "$TOPO_PROXY" \
	"127.0.0.1:$PROXY_PORT" "$UP4_LOG" "203.0.113.7 21000" v2_args4
banner_case "2b banner first, hand-made v2 header, IPv6" "$TOPO_PROXY" \
	"127.0.0.1:$PROXY_PORT" "$UP6_LOG" "2001:db8:7::7 21000" v2_args6
banner_case "2c banner first, hand-made v1 header, IPv4" "$TOPO_PROXY" \
	"127.0.0.1:$PROXY_PORT" "$UP4_LOG" "203.0.113.8 21000" v1_args4

mmp_stop
case_engine_used "$NCONNS"
case_lifecycle
t_finish
