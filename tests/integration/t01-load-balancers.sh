#!/usr/bin/env bash
# t01: real load balancers as PROXY-header senders (cases 1-3).
#   client ns 198.51.100.2 / 2001:db8:1::2
#     -> HAProxy (send-proxy, send-proxy-v2) or nginx (proxy_protocol on)
#     -> mmproxy on 127.0.0.1:7000 -> upstream on 127.0.0.1:9000 / [::1]:9000
# The upstream must see the client's own address and source port, as the
# client itself reports with getsockname(), never the proxy's address.
source "$(dirname "$0")/lib.sh"
t_setup t01

t_require up_start
t_require mmp_start
t_require hap_start
t_require nginx_start

# lb_case NAME FRONTEND_ADDR PORT: one request from the client namespace
# through a load balancer; the right upstream (by family) must see the client.
lb_case() {
	local name=$1 addr=$2 port=$3 log mark
	case_begin "$name"
	up_marks
	if [[ $addr == *:* ]]; then
		log=$UP6_LOG mark=$UP6_MARK
		addr="[$addr]"
	else
		log=$UP4_LOG mark=$UP4_MARK
	fi
	if ! client "$TOPO_CLIENT" -c "$addr:$port" --msg 'hello through the load balancer\n' --timeout 10; then
		case_fail "request failed: $(client_result)"
	elif [[ $CLIENT_LOCAL_ADDR != "$TOPO_CLIENT_IP4" && $CLIENT_LOCAL_ADDR != "$TOPO_CLIENT_IP6" ]]; then
		case_fail "client bound to unexpected $CLIENT_LOCAL_ADDR"
	elif expect_peer "$log" "$mark" "$CLIENT_LOCAL_ADDR" "$CLIENT_LOCAL_PORT"; then
		case_note "upstream saw $(hostport "$CLIENT_LOCAL_ADDR" "$CLIENT_LOCAL_PORT")"
	fi
	case_end
}

lb_case "1 HAProxy send-proxy (v1), IPv4 client" "$TOPO_PROXY_IP4" "$HAP_V1_PORT"
lb_case "1b HAProxy send-proxy (v1), IPv6 client" "$TOPO_PROXY_IP6" "$HAP_V1_PORT"
lb_case "2 HAProxy send-proxy-v2, IPv4 client" "$TOPO_PROXY_IP4" "$HAP_V2_PORT"
lb_case "2b HAProxy send-proxy-v2, IPv6 client" "$TOPO_PROXY_IP6" "$HAP_V2_PORT"
lb_case "3 nginx stream proxy_protocol on, IPv4 client" "$TOPO_PROXY_IP4" "$NGINX_PORT"
lb_case "3b nginx stream proxy_protocol on, IPv6 client" "$TOPO_PROXY_IP6" "$NGINX_PORT"

mmp_stop
case_lifecycle
t_finish
