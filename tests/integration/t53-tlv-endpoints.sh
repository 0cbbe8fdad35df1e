#!/usr/bin/env bash
# t53-tlv-endpoints: cloud load balancers' TLVs (docs/DESIGN.md §12).
# Debian 12's HAProxy (2.6) has no set-proxy-v2-tlv-fmt, so the load
# balancer is mmpt-client / mmpt-udp writing hand-made PROXY v2 headers with
# --pp2-tlv, byte for byte as AWS (0xEA, subtype 0x01, the VPC endpoint ID)
# and Azure (0xEE, subtype 0x01, the LinkID little-endian) send them.
#   TCP, under every engine (MMP_ENGINE):
#     - --allowed-endpoints admits the listed AWS and Azure IDs, refuses
#       another ID, a header without TLVs and a v1 header: closed, no
#       upstream connection, one log line, counted (totals: refused endpoint);
#     - -v 2 logs the TLVs in the per-connection line, non-printable bytes
#       escaped;
#     - SIGHUP reloads the file: a new ID is admitted, a removed one refused;
#       a bad file keeps the old list and names file:line;
#     - a bad file refuses to start, naming file:line and the fix, and
#       leaves no pins;
#     - stacked headers: refused by default; with --strip-stacked the
#       upstream sees the client the second header names.
#   UDP (MMP_ENGINE splice, tc, auto): the same admit/refuse on PROXY v2
#   datagrams, counted as drop_endpoint.
source "$(dirname "$0")/udp-lib.sh"
t_setup t53

if ! is_bpf; then
	case_begin "endpoint policy from PROXY v2 TLVs"
	case_skip "--allowed-endpoints is mmproxy-bpf's"
	t_finish
fi

VPCE_OK=vpce-0123456789abcdef0
VPCE_OTHER=vpce-0fedcba987654321f
TLV_AWS_OK="0xEA:01$(printf %s "$VPCE_OK" | od -An -tx1 | tr -d ' \n')"
TLV_AWS_OTHER="0xEA:01$(printf %s "$VPCE_OTHER" | od -An -tx1 | tr -d ' \n')"
TLV_AZURE_OK=0xEE:0178563412    # LinkID 305419896 (0x12345678), little-endian
TLV_AZURE_OTHER=0xEE:0179563412 # 305419897
EP_FILE="$T_TMP/endpoints"
printf '# test endpoints\naws:%s\nazure:305419896   # the Azure one\n' "$VPCE_OK" >"$EP_FILE"

REMOTE="$TOPO_PROXY_IP4:$PROXY_PORT"
DST4=198.51.100.1:443
KW_ENDPOINT="names no allowed endpoint"
REFUSED=0

t_require up_start
MMP_VERBOSITY=2 t_require mmp_start -l "0.0.0.0:$PROXY_PORT" --listeners 1 --allowed-endpoints "$EP_FILE"

# served NAME CLIENT_ARGS...: echoed, and the upstream saw the header's client.
served() {
	local name=$1 port
	shift
	next_port port
	case_begin "$name: served"
	up_marks
	client "$TOPO_CLIENT" -c "$REMOTE" --pp2 "203.0.113.7:$port" "$DST4" "$@" --msg 'ping\n' --timeout 5 ||
		case_fail "request failed: $(client_result)"
	expect_peer "$UP4_LOG" "$UP4_MARK" 203.0.113.7 "$port" >/dev/null
	case_end
}

# refused NAME CLIENT_ARGS...: closed, no upstream connection, one log line.
refused() {
	local name=$1 mark line
	shift
	case_begin "$name: refused"
	up_marks
	mark=$(log_mark "$MMP_LOG")
	client "$TOPO_CLIENT" -c "$REMOTE" "$@" --expect-close --timeout 5 ||
		case_fail "the proxy did not close the connection: $(client_result)"
	sleep 0.2
	[[ -n $(log_since "$UP4_LOG" "$UP4_MARK") ]] && case_fail "the upstream got it: $(log_since "$UP4_LOG" "$UP4_MARK" | head -1)"
	if line=$(wait_log_since "$MMP_LOG" "$mark" "$KW_ENDPOINT" 2); then
		case_note "logged: ${line#*refused: }"
	else
		case_fail "no '$KW_ENDPOINT' line in the log"
	fi
	REFUSED=$((REFUSED + 1))
	case_end
}

# pp2 ARGS...: a fresh client port's --pp2 header, for refused().
pp2() {
	local port
	next_port port
	echo --pp2 "203.0.113.7:$port" "$DST4"
}

served "AWS $VPCE_OK" --pp2-tlv "$TLV_AWS_OK"
served "Azure 305419896" --pp2-tlv "$TLV_AZURE_OK"
served "Azure 305419896 among other TLVs (ALPN, NOOP)" --pp2-tlv 0x01:6832 --pp2-tlv 0x04: --pp2-tlv "$TLV_AZURE_OK"
# shellcheck disable=SC2046 # pp2 prints several words on purpose
refused "AWS $VPCE_OTHER" $(pp2) --pp2-tlv "$TLV_AWS_OTHER"
# shellcheck disable=SC2046
refused "Azure 305419897" $(pp2) --pp2-tlv "$TLV_AZURE_OTHER"
# shellcheck disable=SC2046
refused "PROXY v2 without TLVs" $(pp2)
# shellcheck disable=SC2046
refused "AWS TLV of another subtype" $(pp2) --pp2-tlv "0xEA:02$(printf %s "$VPCE_OK" | od -An -tx1 | tr -d ' \n')"
refused "PROXY v1" --pp1 203.0.113.7:31000 "$DST4"

case_begin "-v 2: the per-connection line shows the TLVs, escaped"
mark=$(log_mark "$MMP_LOG")
next_port port
# AUTHORITY "a b<ESC>" (space and ESC escaped), then the AWS endpoint.
client "$TOPO_CLIENT" -c "$REMOTE" --pp2 "203.0.113.7:$port" "$DST4" --pp2-tlv 0x02:61201b \
	--pp2-tlv "$TLV_AWS_OK" --msg 'ping\n' --timeout 5 || case_fail "request failed: $(client_result)"
if line=$(wait_log_since "$MMP_LOG" "$mark" "PROXY v2 header from .*client 203.0.113.7:$port" 2); then
	[[ $line == *' authority=a\x20\x1b aws_vpce='"$VPCE_OK"* ]] || case_fail "TLVs not shown as expected: $line"
	case_note "${line#*client }"
else
	case_fail "no per-connection header line at -v 2"
fi
case_end

# reload FILE_CONTENT: write the file, SIGHUP, wait for the proxy's line; RELOAD_LINE.
reload() {
	local mark
	printf '%b' "$1" >"$EP_FILE"
	mark=$(log_mark "$MMP_LOG")
	kill -HUP "$MMP_PID"
	RELOAD_LINE=$(wait_log_since "$MMP_LOG" "$mark" "reload(ed $EP_FILE| failed.*$EP_FILE)" 3)
}

case_begin "SIGHUP: a bad file keeps the old list, naming file:line"
reload "aws:$VPCE_OK\nazure:305419897\nazure:0x1\n"
[[ $RELOAD_LINE == *"reload failed, the previous allowed endpoints stay in force: $EP_FILE:3: bad Azure LinkID"* ]] ||
	case_fail "reload line: ${RELOAD_LINE:-none}"
case_end
served "after a failed reload, Azure 305419896 still" --pp2-tlv "$TLV_AZURE_OK"
case_begin "SIGHUP: the file swaps Azure 305419896 for 305419897"
reload "aws:$VPCE_OK\nazure:305419897\n"
[[ $RELOAD_LINE == *"reloaded $EP_FILE: 2 allowed endpoints"* ]] || case_fail "reload line: ${RELOAD_LINE:-none}"
case_end
served "after the reload, Azure 305419897" --pp2-tlv "$TLV_AZURE_OTHER"
# shellcheck disable=SC2046
refused "after the reload, Azure 305419896" $(pp2) --pp2-tlv "$TLV_AZURE_OK"

# A stacked header: the nearer load balancer's (with the endpoint), then the farther one's, v1.
case_begin "stacked headers refused by default"
mark=$(log_mark "$MMP_LOG")
up_marks
next_port port
client "$TOPO_CLIENT" -c "$REMOTE" --pp2 "198.51.100.9:$port" "$DST4" --pp2-tlv "$TLV_AWS_OK" \
	--raw "PROXY TCP4 192.0.2.77 198.51.100.1 4242 443\r\n" --expect-close --timeout 5 ||
	case_fail "the proxy did not close the connection: $(client_result)"
[[ -n $(log_since "$UP4_LOG" "$UP4_MARK") ]] && case_fail "the upstream got it"
line=$(wait_log_since "$MMP_LOG" "$mark" "stacked PROXY headers" 2) || case_fail "no 'stacked PROXY headers' line"
case_note "${line#*: }"
case_end

mmp_stop
case_begin "totals: refused endpoint counts every refusal"
line=$(grep -m1 'totals:' "$MMP_LOG")
[[ $line == *"refused endpoint $REFUSED"* ]] || case_fail "want 'refused endpoint $REFUSED' in: $line"
case_end

MMP_VERBOSITY=1 t_require mmp_start -l "0.0.0.0:$PROXY_PORT" --listeners 1 --allowed-endpoints "$EP_FILE" --strip-stacked
case_begin "--strip-stacked: the upstream sees the second header's client"
up_marks
next_port port
client "$TOPO_CLIENT" -c "$REMOTE" --pp2 "198.51.100.9:$port" "$DST4" --pp2-tlv "$TLV_AWS_OK" \
	--raw "PROXY TCP4 192.0.2.77 198.51.100.1 $port 443\r\n" --msg 'ping\n' --timeout 5 ||
	case_fail "request failed: $(client_result)"
expect_peer "$UP4_LOG" "$UP4_MARK" 192.0.2.77 "$port" >/dev/null && case_note "upstream saw 192.0.2.77:$port"
case_end
mmp_stop

case_begin "a bad --allowed-endpoints file refuses to start, naming file:line and the fix"
printf 'aws:%s\naws:VPCE-XYZ\n' "$VPCE_OK" >"$T_TMP/bad-endpoints"
out=$(ns_exec "$TOPO_PROXY" timeout 10 "$MMP_BIN" run -l "127.0.0.1:$((PROXY_PORT + 1))" \
	--pin-dir "/sys/fs/bpf/mmproxy-bpf-test-$$-bad" --allowed-endpoints "$T_TMP/bad-endpoints" 2>&1)
rc=$?
((rc != 0 && rc != 124)) || case_fail "exit status $rc, expected a refusal"
[[ $out == *"$T_TMP/bad-endpoints:2: bad AWS VPC endpoint ID (write aws:vpce-"* ]] || case_fail "message: $out"
[[ -e /sys/fs/bpf/mmproxy-bpf-test-$$-bad ]] && case_fail "it left its pin directory"
rm -rf "/sys/fs/bpf/mmproxy-bpf-test-$$-bad"
case_end

# ------------------------------------------------------------------ UDP --
case $MMP_ENGINE in
splice | tc | auto)
	if [[ $MMP_ENGINE != splice ]]; then
		ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1
	fi
	up_stop
	t_require udp_up_start
	t_require udp_mmp_start --udp-header every --listeners 1 --allowed-endpoints "$EP_FILE"
	# udp_case NAME WANT(served|refused) CLIENT_PORT TLV...
	udp_case() {
		local name=$1 want=$2 cport=$3 d0 m4
		shift 3
		local tlvs=()
		for t in "$@"; do tlvs+=(--pp2-tlv "$t"); done
		case_begin "UDP $name: $want"
		d0=$(udp_counter drop_endpoint) m4=$(log_mark "$UP4_LOG")
		if [[ $want == served ]]; then
			udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client "203.0.113.8:$cport" -n 5 --echo \
				--timeout 3 "${tlvs[@]}" || case_fail "not answered: $(udp_result)"
			udp_peer_seen "$UP4_LOG" 203.0.113.8 "$cport" || case_fail "the upstream did not see 203.0.113.8:$cport"
		else
			udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client "203.0.113.8:$cport" -n 3 --echo \
				--timeout 1 "${tlvs[@]}" && case_fail "it was answered: $(udp_result)"
			udp_counters_fresh
			[[ -n $(log_since "$UP4_LOG" "$m4") ]] && case_fail "the upstream saw it"
			(($(udp_counter drop_endpoint) == d0 + 3)) ||
				case_fail "drop_endpoint went from $d0 to $(udp_counter drop_endpoint), expected 3 more"
		fi
		case_end
	}
	udp_case "AWS $VPCE_OK" served 41001 "$TLV_AWS_OK"
	udp_case "AWS $VPCE_OTHER" refused 41002 "$TLV_AWS_OTHER"
	udp_case "Azure 305419897" served 41003 "$TLV_AZURE_OTHER"
	udp_case "Azure 305419896" refused 41004 "$TLV_AZURE_OK"
	udp_case "PROXY v2 without TLVs" refused 41005
	mmp_stop
	;;
*)
	case_begin "UDP endpoint policy"
	case_skip "UDP mode has no $MMP_ENGINE path"
	;;
esac

case_lifecycle
t_finish
