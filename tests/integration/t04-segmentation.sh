#!/usr/bin/env bash
# t04: how the header arrives in segments (cases 6 and 7).
#   6: header and first request in ONE write (one segment): the echo must come
#      back at once (< 1 s), for v1/v2 and IPv4/IPv6 clients.
#   7: the header split over 3 writes 200 ms apart (TCP_NODELAY, so 3
#      segments): still parsed, still spoofed.
source "$(dirname "$0")/lib.sh"
t_setup t04

t_require up_start
t_require mmp_start

# seg_case NAME FAMILY ADDR MAX_MS REPS PPFLAG DST CLIENT_ARGS...
# REPS times, from a fresh port each: header "PPFLAG [ADDR]:port DST" plus a
# request per CLIENT_ARGS; the echo must come back within MAX_MS and the
# upstream of FAMILY must see ADDR:port.
seg_case() {
	local name=$1 fam=$2 addr=$3 max_ms=$4 reps=$5 ppflag=$6 dst=$7 log mark ms port i worst=0
	shift 7
	case_begin "$name"
	if [[ $fam == 6 ]]; then log=UP6_LOG mark=UP6_MARK; else log=UP4_LOG mark=UP4_MARK; fi
	for ((i = 0; i < reps; i++)); do
		next_port port
		up_marks
		if ! client "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" "$ppflag" "$(hostport "$addr" "$port")" "$dst" \
			"$@" --msg 'GET / HTTP/1.0\r\n\r\n' --timeout 10; then
			case_fail "request $((i + 1)) failed: $(client_result)"
			break
		fi
		ms=$(grep '^echo ok' <<<"$CLIENT_OUT" | awk '{print $3}')
		((ms > worst)) && worst=$ms
		((ms < max_ms)) || case_fail "request $((i + 1)): echo took $ms ms (limit $max_ms)"
		expect_peer "${!log}" "${!mark}" "$addr" "$port" || break
	done
	((${#CASE_ERRS[@]})) || case_note "$reps requests, slowest echo $worst ms"
	case_end
}

# Regression (docs/DESIGN.md §3a items 1 and 4): with the sockmap engine a request
# that arrived in the same segment as the header sat in the socket queue
# until the next packet (forever, for a client waiting for the answer) unless
# the socket was kicked after insertion; and a header consumed with recv()
# still reached the upstream because the whole first skb went to the verdict.
# The echo comparison catches a leaked header, the time limit the stall.
V4DST="203.0.113.1:443"
V6DST="[2001:db8:1::1]:443"
seg_case "6a v1 IPv4 header+request in one write" 4 203.0.113.30 1000 5 --pp1 "$V4DST" --coalesce
seg_case "6b v2 IPv4 header+request in one write" 4 203.0.113.31 1000 5 --pp2 "$V4DST" --coalesce
seg_case "6c v1 IPv6 header+request in one write" 6 2001:db8:2::30 1000 5 --pp1 "$V6DST" --coalesce
seg_case "6d v2 IPv6 header+request in one write" 6 2001:db8:2::31 1000 5 --pp2 "$V6DST" --coalesce

# Regression: the sockmap verdict strips the header from the first skb with
# bpf_skb_adjust_room(), which the kernel refuses for more than 4095 bytes at
# a time; the skb (header and request) was dropped and the echo never came.
# A v2 header with a 5000-byte NOOP TLV, the request in the same write.
big_v2_header() {
	local port=$1 tlv
	tlv=$(printf '\\x00%.0s' $(seq 5000))
	# signature, v2 PROXY, TCP4, length 12 + 3 + 5000 = 0x1397, addresses, ports, NOOP TLV
	printf '%s' '\x0d\x0a\x0d\x0a\x00\x0d\x0a\x51\x55\x49\x54\x0a\x21\x11\x13\x97'
	printf '%s' '\xcb\x00\x71\x22\xcb\x00\x71\x01'
	printf '\\x%02x\\x%02x\\x01\\xbb' $((port >> 8)) $((port & 255))
	printf '%s' '\x04\x13\x88' "$tlv"
}
case_begin "6e v2 header with a 5000-byte TLV, request in the same write"
next_port port
up_marks
if ! client "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" --raw "$(big_v2_header "$port")" \
	--msg 'GET / HTTP/1.0\r\n\r\n' --coalesce --timeout 10; then
	case_fail "request failed: $(client_result)"
elif expect_peer "$UP4_LOG" "$UP4_MARK" 203.0.113.34 "$port"; then
	case_note "echoed, upstream saw 203.0.113.34:$port, header of $((16 + 12 + 3 + 5000)) bytes"
fi
case_end

# Case 7: a parser must keep what it has and wait for more, never take a
# short read for the whole header (nor for garbage). 7c also puts the request
# in the last piece, right behind the end of the header.
seg_case "7a v1 header in 3 writes 200 ms apart" 4 203.0.113.32 3000 1 --pp1 "$V4DST" \
	--split 3 --split-delay 200
seg_case "7b v2 header in 3 writes 200 ms apart" 4 203.0.113.33 3000 1 --pp2 "$V4DST" \
	--split 3 --split-delay 200
seg_case "7c v2 IPv6 header in 3 writes, request in the last one" 6 2001:db8:2::33 3000 1 --pp2 "$V6DST" \
	--split 3 --split-delay 200 --coalesce

mmp_stop
case_lifecycle
t_finish
