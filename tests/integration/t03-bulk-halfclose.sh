#!/usr/bin/env bash
# t03: 64 MiB each way through HAProxy (send-proxy-v2) and mmproxy, with
# half-closes (case 5). Both ends run the same transfer machine (struct xfer
# in tests/tools/mmpt_common.c): send N bytes of a deterministic stream,
# shutdown(SHUT_WR), read and hash everything until EOF. Each end prints the
# sha256 of what it sent and of what it received; they must match crosswise.
#
# Regression (docs/DESIGN.md §3a item 5): forwarding a FIN as soon as EPOLLRDHUP fired,
# while redirected bytes were still queued, truncated a 64 MiB transfer at
# 6 MB. Case 5a catches it on the client->upstream direction, 5b on the other.
source "$(dirname "$0")/lib.sh"
t_setup t03

SIZE=$((64 << 20))
# Each connection's close, and which side reset, in the proxy's lines that a
# failed case prints: 5c once failed under ASan (splice) with both directions
# short and the upstream reset, and -v 1 had logged nothing.
MMP_VERBOSITY=2
t_require mmp_start
t_require hap_start

# bulk_case NAME "UPSTREAM_ARGS" "CLIENT_ARGS"
bulk_case() {
	local name=$1 up_args=$2 cl_args=$3 done_line t0 ms
	case_begin "$name"
	# shellcheck disable=SC2086 # the args are word lists
	if ! up_start -m xfer $up_args; then
		case_fail "upstream did not start"
		case_end
		return
	fi
	t0=$(date +%s%N)
	# shellcheck disable=SC2086
	client "$TOPO_CLIENT" -c "$TOPO_PROXY_IP4:$HAP_V2_PORT" $cl_args --timeout 150 ||
		case_fail "client: $(client_result)"
	ms=$((($(date +%s%N) - t0) / 1000000))
	# The upstream's line: "done ADDR PORT sent N SHA recv N SHA".
	if ! done_line=$(wait_log_since "$UP4_LOG" 0 '^done ' 10); then
		case_fail "upstream never finished its side"
	else
		check_xfer_exact "$done_line" "$TOPO_CLIENT_IP4"
	fi
	case_note "$((2 * SIZE / 1048576)) MiB in ${ms} ms, sha256 equal both ways"
	up_stop
	case_end
}

# 5a: the client sends everything and half-closes; only then does the
# upstream send its 64 MiB (towards the side that already sent its FIN),
# then closes.
bulk_case "5a half-close from the client first" "--send $SIZE --after-eof" "--send $SIZE"
# 5b: the upstream sends everything and half-closes first; the client sends
# its 64 MiB only after that EOF.
bulk_case "5b half-close from the upstream first" "--send $SIZE" "--send $SIZE --after-eof"
# 5c: both directions at once, each half-closing when done.
bulk_case "5c both directions at once" "--send $SIZE" "--send $SIZE"

mmp_stop

# 5d: IPv6 end to end: an IPv6 load balancer connection carrying a TCP6
# header, so both of the proxy's connections are IPv6 (for the tc engine,
# an eligible IPv6 flow). Regression: IPv6 BIG TCP segments on lo carry a
# hop-by-hop jumbo header, which the tc rewrite once passed untouched, so
# the first bulk segment after the hand-off reset the connection.
if mmp_start -l "[::1]:$PROXY_PORT"; then
	case_begin "5d IPv6 load balancer and client, both directions at once"
	if up_start -m xfer --send "$SIZE"; then
		client "$TOPO_PROXY" -c "[::1]:$PROXY_PORT" --pp2 "[2001:db8:3::7]:40001" "[::1]:$PROXY_PORT" \
			--send "$SIZE" --timeout 150 || case_fail "client: $(client_result)"
		if ! done_line=$(wait_log_since "$UP6_LOG" 0 '^done ' 10); then
			case_fail "upstream never finished its side"
		else
			read -r _ a p _ un ush _ urn ursh <<<"$done_line"
			read -r _ _ cs csh _ crn crsh _ <<<"$(grep '^xfer ' <<<"$CLIENT_OUT")"
			[[ $a == "2001:db8:3::7" && $p == 40001 ]] || case_fail "upstream saw $a:$p, want 2001:db8:3::7:40001"
			[[ $urn == "$cs" && $ursh == "$csh" ]] ||
				case_fail "client->upstream: sent $cs bytes ${csh:0:12}, upstream got $urn ${ursh:0:12}"
			[[ $crn == "$un" && $crsh == "$ush" ]] ||
				case_fail "upstream->client: sent $un bytes ${ush:0:12}, client got $crn ${crsh:0:12}"
		fi
		case_note "$((2 * SIZE / 1048576)) MiB over IPv6, sha256 equal both ways"
		up_stop
	else
		case_fail "upstream did not start"
	fi
	case_end
	mmp_stop
fi
case_lifecycle
t_finish
