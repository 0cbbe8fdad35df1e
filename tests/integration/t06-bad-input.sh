#!/usr/bin/env bash
# t06: bad input (case 9). For each kind of bad connection the proxy must
#   - close the client connection (mmpt-client --expect-close),
#   - not connect anywhere for it (no new "peer" at the upstreams),
#   - log one clear line with a keyword on its stderr        [mmproxy-bpf],
#   - keep serving: a good connection right after works,
#   - return to its baseline count of open fds               [mmproxy-bpf].
# Keywords (lib.sh KW_*), aligned with mmproxy-bpf's messages:
#   garbage / truncated v2 / v1 line > 107 bytes   "invalid PROXY header"
#   header never completes (--header-timeout 1)    "timed out waiting for PROXY header"
#   load balancer not in the allowed subnets       "not allowed"
#   upstream refuses the connection                "upstream"
#   started without CAP_NET_ADMIN (exits at once)  "CAP_NET_ADMIN"
source "$(dirname "$0")/lib.sh"
t_setup t06

# The load balancer address allowed in 9e: a TEST-NET address on the proxy
# namespace's lo, so a "good" LB can connect from it.
LB_OK=203.0.113.254
ip -n "$TOPO_PROXY" addr add "$LB_OK/32" dev lo || exit 1

t_require up_start
# One listener: the fd baseline is then exact (no worker that first allocates
# its per-thread state during the checks).
t_require mmp_start --header-timeout 1 --listeners 1

# proxy_baseline: serve two good connections (lazy allocations done), then
# remember the fd count. Extra args go to the client (e.g. -b LB address).
proxy_baseline() {
	local p
	next_port p
	echo_via_proxy "203.0.113.60:$p" "203.0.113.1:443" "$@"
	next_port p
	echo_via_proxy "203.0.113.60:$p" "203.0.113.1:443" "$@"
	sleep 0.3
	FD_BASE=$(mmp_fds)
}

# bad_case NAME KEYWORD close|self [--good-args "ARGS"] CLIENT_ARGS...
#   close: the client waits (5 s at most) for the proxy to close on it;
#   self:  the client closes by itself after 100 ms (truncated header + EOF).
# Sets BAD_MS to how long the proxy took to close (close mode).
bad_case() {
	local name=$1 kw=$2 how=$3 good_args=() line n p
	shift 3
	if [[ ${1:-} == --good-args ]]; then
		read -ra good_args <<<"$2"
		shift 2
	fi
	case_begin "$name"
	up_marks
	local mark
	mark=$(log_mark "$MMP_LOG")
	BAD_MS=""
	if [[ $how == close ]]; then
		if client "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" "$@" --expect-close --timeout 5; then
			BAD_MS=$(grep '^closed' <<<"$CLIENT_OUT" | awk '{print $3}')
			case_note "closed ($(grep '^closed' <<<"$CLIENT_OUT" | awk '{print $2}')) after $BAD_MS ms"
		else
			case_fail "the proxy did not close the connection: $(client_result)"
		fi
	else
		client "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" "$@" --close --hold-ms 100 ||
			case_fail "client: $(client_result)"
	fi
	sleep 0.2
	if [[ -n $(log_since "$UP4_LOG" "$UP4_MARK"; log_since "$UP6_LOG" "$UP6_MARK") ]]; then
		case_fail "the upstream got a connection for it: $(log_since "$UP4_LOG" "$UP4_MARK" | head -1)"
	fi
	if is_bpf; then
		if line=$(wait_log_since "$MMP_LOG" "$mark" "$kw" 3); then
			n=$(log_since "$MMP_LOG" "$mark" | grep -c -- "$kw")
			((n == 1)) || case_fail "$n log lines contain '$kw', expected one"
		else
			case_fail "no log line contains '$kw'"
		fi
	else
		case_skip_part "log line with '$kw': mmproxy-bpf only"
	fi
	# Still serving?
	next_port p
	echo_via_proxy "203.0.113.61:$p" "203.0.113.1:443" "${good_args[@]}"
	if is_bpf; then
		mmp_fds_back "$FD_BASE" 5
	else
		case_skip_part "fd count back to baseline: mmproxy-bpf only"
	fi
	[[ -n ${line:-} ]] && case_note "logged: ${line:0:150}"
}

proxy_baseline

bad_case "9a garbage instead of a header" "$KW_INVALID" close \
	--raw 'GET / HTTP/1.1\r\nHost: example\r\n\r\n'
case_end

# 16-byte v2 preamble announcing 12 address bytes, then only 2 of them, then EOF.
bad_case "9b truncated v2 header, then close" "$KW_INVALID" self \
	--raw '\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c\xcb\x00'
case_end

# v1 allows 107 bytes including CRLF (HAProxy doc/proxy-protocol.txt).
long=$(printf '1%.0s' {1..120})
bad_case "9c v1 line of 133 bytes" "$KW_INVALID" close --raw "PROXY TCP4 $long\\r\\n"
case_end
# Without any CRLF: it can no longer become a header once past 107 bytes, so
# it must be rejected at once, not after the 1 s header timeout.
bad_case "9c' v1 line past 107 bytes without CRLF, rejected before the header timeout" "$KW_INVALID" close \
	--raw "PROXY TCP4 $long"
[[ -n $BAD_MS ]] && ((BAD_MS >= 900)) && case_fail "closed after $BAD_MS ms: looks like the header timeout, not the length check"
case_end

# Regression (slowloris): a header that never completes must not hold a
# socket forever. --header-timeout 1: closed after about 1 s.
if is_bpf; then
	bad_case "9d header never completes (--header-timeout 1)" "$KW_TIMEOUT" close \
		--raw 'PROXY TCP4 203.0.113.40 '
	[[ -n $BAD_MS ]] && ((BAD_MS < 800 || BAD_MS > 3500)) && case_fail "closed after $BAD_MS ms, expected about 1000"
	case_end
else
	case_begin "9d header never completes (--header-timeout 1)"
	case_skip "go-mmproxy has no header timeout (it would wait forever)"
fi

# The upstream refuses (nothing listens): the client is closed; then the
# upstream comes back and the proxy serves again.
up_stop
next_port p
UP4_LOG=/dev/null UP6_LOG=/dev/null
up_marks
case_begin "9f upstream refuses the connection"
mark=$(log_mark "$MMP_LOG")
if client "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" --pp2 "203.0.113.41:$p" 203.0.113.1:443 --expect-close --timeout 5; then
	case_note "closed after $(grep '^closed' <<<"$CLIENT_OUT" | awk '{print $3}') ms"
else
	case_fail "the proxy did not close the connection: $(client_result)"
fi
if is_bpf; then
	if line=$(wait_log_since "$MMP_LOG" "$mark" "$KW_UPSTREAM" 3); then
		case_note "logged: ${line:0:150}"
	else
		case_fail "no log line contains '$KW_UPSTREAM'"
	fi
else
	case_skip_part "log line with '$KW_UPSTREAM': mmproxy-bpf only"
fi
up_start || case_fail "upstream did not restart"
next_port p
echo_via_proxy "203.0.113.61:$p" "203.0.113.1:443"
if is_bpf; then mmp_fds_back "$FD_BASE" 5; else case_skip_part "fd count back to baseline: mmproxy-bpf only"; fi
case_end

# Allowed subnets apply to the load balancer (the connecting peer), as in
# go-mmproxy: only 203.0.113.0/24 may connect; 127.0.0.1 is refused even with
# a well-formed header.
mmp_stop
echo "203.0.113.0/24" >"$T_TMP/allowed.txt"
t_require mmp_start -a "$T_TMP/allowed.txt" --header-timeout 1 --listeners 1
proxy_baseline -b "$LB_OK"
next_port p
bad_case "9e load balancer 127.0.0.1 not in the allowed subnets" "$KW_NOT_ALLOWED" close \
	--good-args "-b $LB_OK" --pp2 "203.0.113.42:$p" 203.0.113.1:443
case_end
mmp_stop

# Without CAP_NET_ADMIN (IP_TRANSPARENT, BPF) mmproxy-bpf must refuse to start
# and say which capability is missing, rather than fail on every connection.
case_begin "9g started without CAP_NET_ADMIN/CAP_NET_RAW: exits non-zero, names CAP_NET_ADMIN"
if is_bpf; then
	mmp_cmdline -l "127.0.0.1:$((PROXY_PORT + 1))"
	cleanup_push "rm -rf '$MMP_PINDIR'"
	# capsh drops them from the bounding set; the exec'ed proxy (uid 0) then
	# has neither in its permitted/effective sets.
	out=$(timeout 10 nsenter --net="/run/netns/$TOPO_PROXY" -- \
		capsh --drop=cap_net_admin,cap_net_raw -- -c 'exec "$@"' mmproxy "${MMP_CMD[@]}" 2>&1)
	rc=$?
	if ((rc == 124)); then
		case_fail "still running after 10 s"
	elif ((rc == 0)); then
		case_fail "exited 0"
	fi
	if grep -q "$KW_CAP" <<<"$out"; then
		case_note "exit $rc: $(grep -m1 "$KW_CAP" <<<"$out" | cut -c1-150)"
	else
		case_fail "no line mentions $KW_CAP (output: $(head -c 300 <<<"$out" | tr '\n' ' '))"
	fi
	[[ -n $(find "$MMP_PINDIR" -mindepth 1 2>/dev/null) ]] && case_fail "left pins in $MMP_PINDIR"
	MMP_LOG=""
	case_end
else
	case_skip "go-mmproxy does not check capabilities at start"
fi

case_lifecycle
t_finish
