# shellcheck shell=bash
# shellcheck disable=SC2034 # the table is read by the scripts that source this
# bench/scenarios.sh: the scenarios bench/run.sh and bench/bridged.sh share, so
# that a scenario's name means the same generator arguments in both.

# name|tool|generator arguments|upstream|header for proxies
SCENARIO_TABLE=(
	"pp50|loadgen|-m pingpong -c 50 -s 64|echo|v1"
	"pp1000|loadgen|-m pingpong -c 1000 -s 64 --connect-rate 5000|echo|v2"
	"bulk1-down|loadgen|-m bulk -c 1 --direction down|source|v2"
	"bulk1-up|loadgen|-m bulk -c 1 --direction up|sink|v2"
	"bulk8-down|loadgen|-m bulk -c 8 --direction down|source|v2"
	"bulk8-up|loadgen|-m bulk -c 8 --direction up|sink|v2"
	"connrate|loadgen|-m connrate -c 50 -s 64|echo|v1"
	"stream50|loadgen|-m stream -c 50|echo|v1"
	"udp-stream|udpgen|stream -c 50 -s 1200|udpsink|v2"
	"udp-rr|udpgen|rr -c 50 -s 1200|udpecho|v2"
	# wrk (2 threads, 64 connections) -> HAProxy send-proxy-v2 -> the proxy ->
	# nginx; "none" is wrk -> HAProxy -> nginx. Clients in the second namespace.
	"http-ka|wrk|-c 64|nginx|v2"
	"http-close|wrk|-c 64 --close|nginx|v2"
)
ALL_SCENARIOS=$(printf '%s\n' "${SCENARIO_TABLE[@]}" | cut -d'|' -f1 | paste -sd, -)

# scenario_line NAME: its line of the table; fails for an unknown name.
scenario_line() {
	local l
	for l in "${SCENARIO_TABLE[@]}"; do
		[[ ${l%%|*} == "$1" ]] && { printf '%s\n' "$l"; return 0; }
	done
	return 1
}
