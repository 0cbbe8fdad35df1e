#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Side-by-side benchmark: every scenario against every configuration,
# interleaved (A B C D A B C D ...), in network namespaces of its own.
#
#   bench/run.sh --quick                  ~5 minutes, what `make bench` runs
#   bench/run.sh --full                   longer runs, 5 rounds
#   bench/run.sh --engines splice,sockmap --with-haproxy --rounds 5
#   bench/run.sh --scenarios pp50,bulk1-down -T 5
#   bench/run.sh --field                  then the field loads (bench/field.sh)
#
# Configurations: no proxy (the generator talks to the upstream directly),
# mmproxy-bpf once per engine, go-mmproxy, go-mmproxy HEAD and mmproxy-rs
# when installed, and with --with-haproxy the same behind HAProxy (clients in
# a second namespace joined by veth). The http scenarios always run wrk
# through HAProxy to nginx.
# Results: bench/results/<date>-<host>.json, a table of medians on stdout,
# bench/results/<date>-<host>.png, copied to bench/results/latest.png.
#
# Needs root. Traffic stays on loopback and on a veth pair between the
# namespaces this script makes (TEST-NET 198.51.100.0/24); everything it
# starts is stopped by PID, and the namespaces are deleted on exit.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=nginx_conf.sh
source "$BENCH_DIR/nginx_conf.sh"
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"
# shellcheck source=scenarios.sh
source "$BENCH_DIR/scenarios.sh"
ROOT=$(cd "$BENCH_DIR/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TOOLS=$BUILD/bench
BIN=${MMPROXY_BPF:-$BUILD/mmproxy-bpf}
# A/B runs: a second mmproxy-bpf binary, run as mmproxy-bpf-base/ENGINE in the same rounds.
BASE_BIN=${MMPROXY_BPF_BASE:-}
GO_MMPROXY=${GO_MMPROXY:-$(command -v go-mmproxy || true)}
# Peers that are not packaged (built from their repositories, see
# docs/benchmarks.md): compared when installed.
GO_MMPROXY_HEAD=${GO_MMPROXY_HEAD:-/usr/local/bin/go-mmproxy-head}
MMPROXY_RS=${MMPROXY_RS:-/usr/local/bin/mmproxy-rs}
HAPROXY=${HAPROXY:-$(command -v haproxy || true)}

ORIG_ARGS="$*"
PROFILE=quick
ROUNDS=
DURATION=
WARMUP=
ENGINES=splice
WITH_HAPROXY=0
SCENARIOS=
ONLY_CONFIGS=
LG_THREADS=1
UP_THREADS=2
OUT_DIR=$BENCH_DIR/results
PLOT=1
FIELD=0

usage() {
	cat <<EOF
usage: bench/run.sh [--quick | --full] [options]
  --quick               short runs, 3 rounds (~5 min; the default)
  --full                long runs, 5 rounds (~20 min; ~45 with --with-haproxy)
  --rounds N            rounds of every configuration (at least 3)
  -T, --duration S      measured seconds per run (overrides the profile)
  --warmup S            warm-up seconds per run
  --engines LIST        mmproxy-bpf engines, comma-separated [splice]
  --with-haproxy        also run each configuration behind HAProxy (TCP only)
  --scenarios LIST      subset of: $ALL_SCENARIOS
  --configs LIST        subset of the configurations, e.g. none,go-mmproxy
  --loadgen-threads N   generator threads [1]
  --upstream-threads N  upstream server threads [2]
  --out DIR             where results go [bench/results]
  --no-plot             skip the gnuplot chart
  --field               afterwards run bench/field.sh (tcpkali streams, wrk
                        through HAProxy to nginx) with the same rounds
Environment: MMPROXY_BPF, GO_MMPROXY, GO_MMPROXY_HEAD, MMPROXY_RS, HAPROXY
  override the binaries;
  MMPROXY_BPF_BASE adds a second mmproxy-bpf binary (configurations
  mmproxy-bpf-base/ENGINE) for before/after comparisons in one run.
EOF
}

while (($#)); do
	case $1 in
	--quick) PROFILE=quick ;;
	--full) PROFILE=full ;;
	--rounds) ROUNDS=$2; shift ;;
	-T | --duration) DURATION=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--engines) ENGINES=$2; shift ;;
	--with-haproxy) WITH_HAPROXY=1 ;;
	--scenarios) SCENARIOS=$2; shift ;;
	--configs) ONLY_CONFIGS=$2; shift ;;
	--loadgen-threads) LG_THREADS=$2; shift ;;
	--upstream-threads) UP_THREADS=$2; shift ;;
	--out) OUT_DIR=$2; shift ;;
	--no-plot) PLOT=0 ;;
	--field) FIELD=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done

case $PROFILE in
quick) : "${ROUNDS:=3}" "${DURATION:=2}" "${WARMUP:=1}" ;;
full) : "${ROUNDS:=5}" "${DURATION:=8}" "${WARMUP:=2}" ;;
esac
: "${SCENARIOS:=$ALL_SCENARIOS}"
if ((ROUNDS < 3)); then
	echo "run.sh: --rounds must be at least 3 (medians of fewer mean little)" >&2
	exit 2
fi

log() { printf '%s\n' "$*" >&2; }
die() { log "run.sh: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, IP_TRANSPARENT, BPF): sudo bench/run.sh"
for t in loadgen upstream udpgen; do
	[[ -x $TOOLS/$t ]] || die "$TOOLS/$t missing: run 'make bench-tools' first"
done
command -v python3 >/dev/null || die "python3 missing (scripts/deps.sh installs it)"

# ---- state and cleanup --------------------------------------------------

TAG=mmpb-$$
NS=$TAG-proxy
NSC=$TAG-client
PIN_DIR=/sys/fs/bpf/mmproxy-bpf-bench-$$
TMP=$(mktemp -d /tmp/mmpb-bench.XXXXXX)
RAW=$TMP/runs.jsonl
SKIPS=$TMP/skips.jsonl
: >"$RAW"
: >"$SKIPS"
PIDS=()
NS_MADE=()

cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		stop_pid "$pid"
	done
	ns_del "${NS_MADE[@]}"
	[[ -d $PIN_DIR ]] && rm -rf "$PIN_DIR"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM


# ---- topology -----------------------------------------------------------

setup_ns() {
	ip netns add "$NS"
	NS_MADE+=("$NS")
	in_ns "$NS" ip link set lo up
	# Transparent proxying: answers from the upstream to a client address
	# that is not local are delivered locally (docs/DESIGN.md §3a item 8).
	in_ns "$NS" ip rule add from 127.0.0.1/8 iif lo table 123
	in_ns "$NS" ip route add local 0.0.0.0/0 dev lo table 123
	in_ns "$NS" ip -6 rule add from ::1/128 iif lo table 123
	in_ns "$NS" ip -6 route add local ::/0 dev lo table 123
	in_ns "$NS" sysctl -qw net.ipv4.conf.lo.route_localnet=1
	in_ns "$NS" sysctl -qw net.ipv4.conf.lo.accept_local=1
	# connrate: more ports, and TIME_WAIT reuse, or the generator runs out.
	in_ns "$NS" sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
	in_ns "$NS" sysctl -qw net.ipv4.tcp_tw_reuse=1
	in_ns "$NS" sysctl -qw net.core.somaxconn=65535
	in_ns "$NS" sysctl -qw net.ipv4.tcp_max_syn_backlog=65535

	((WITH_HAPROXY || WANT_HTTP)) || return 0
	ip netns add "$NSC"
	NS_MADE+=("$NSC")
	in_ns "$NSC" ip link set lo up
	ip link add "${TAG}c" netns "$NSC" type veth peer name "${TAG}p" netns "$NS"
	in_ns "$NSC" ip addr add 198.51.100.2/24 dev "${TAG}c"
	in_ns "$NS" ip addr add 198.51.100.1/24 dev "${TAG}p"
	in_ns "$NSC" ip link set "${TAG}c" up
	in_ns "$NS" ip link set "${TAG}p" up
	# Clients connect from 126 addresses in turn (.129-.254), so that a
	# client ip:port comes back only after its TIME_WAIT: sooner, and the
	# proxy's transparent bind to it would meet its own TIME_WAIT socket.
	for ((i = 129; i < 255; i++)); do
		echo "addr add 198.51.100.$i/24 dev ${TAG}c"
	done | in_ns "$NSC" ip -batch -
	in_ns "$NSC" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1
}

# Upstreams run for the whole session, one port per kind.
PORT_PROXY=8443
PORT_HAPROXY=8080
declare -A UP_PORT=([echo]=9000 [sink]=9001 [source]=9002 [nginx]=9080 [udpecho]=9100 [udpsink]=9101)

start_upstreams() {
	local kind
	# Started with nsenter itself, not through a shell function, so that $!
	# is the server's own PID (nsenter execs it) and stopping it works.
	for kind in echo sink source; do
		nsenter --net="/run/netns/$NS" "$TOOLS/upstream" -m "$kind" --threads "$UP_THREADS" \
			-l "127.0.0.1:${UP_PORT[$kind]}" -l "[::1]:${UP_PORT[$kind]}" \
			>"$TMP/upstream-$kind.log" 2>&1 &
		PIDS+=($!)
		wait_listen "$NS" tcp "${UP_PORT[$kind]}" $! || die "upstream $kind did not start"
	done
	nsenter --net="/run/netns/$NS" "$TOOLS/udpgen" echo --threads "$UP_THREADS" \
		-l "127.0.0.1:${UP_PORT[udpecho]}" -l "[::1]:${UP_PORT[udpecho]}" \
		>"$TMP/udpecho.log" 2>&1 &
	PIDS+=($!)
	wait_listen "$NS" udp "${UP_PORT[udpecho]}" $! || die "udp echo did not start"
	((WANT_HTTP)) || return 0
	nginx_conf "$TMP" "${UP_PORT[nginx]}"
	(ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec nsenter --net="/run/netns/$NS" nginx -p "$TMP" -c "$TMP/nginx.conf" \
		-e "$TMP/nginx-error.log") >"$TMP/nginx.log" 2>&1 &
	PIDS+=($!)
	wait_listen "$NS" tcp "${UP_PORT[nginx]}" $! || die "nginx did not start"
}

# ---- configurations -----------------------------------------------------

MMP_UDP=0
CONFIGS=(none)
IFS=, read -r -a ENGINE_LIST <<<"$ENGINES"
if [[ -x $BIN ]]; then
	for e in "${ENGINE_LIST[@]}"; do CONFIGS+=("mmproxy-bpf/$e"); done
	if [[ -n $BASE_BIN ]]; then
		[[ -x $BASE_BIN ]] || die "MMPROXY_BPF_BASE=$BASE_BIN is not executable"
		for e in "${ENGINE_LIST[@]}"; do CONFIGS+=("mmproxy-bpf-base/$e"); done
	fi
	# UDP counts as supported once the help offers it as a protocol
	# (the -p/--protocol line) without saying it is not implemented yet.
	if "$BIN" run --help 2>&1 | grep -E -- '--protocol|^ *-p[ ,]' | grep -iw udp |
		grep -qviE 'not (yet )?(implemented|supported)'; then
		MMP_UDP=1
	fi
else
	log "run.sh: $BIN not built: mmproxy-bpf configurations skipped ('make' builds it)"
fi
if [[ -n $GO_MMPROXY ]]; then
	CONFIGS+=(go-mmproxy)
else
	log "run.sh: go-mmproxy not installed: skipped (scripts/deps.sh installs it)"
fi
[[ -x $GO_MMPROXY_HEAD ]] && CONFIGS+=(go-mmproxy-head)
[[ -x $MMPROXY_RS ]] && CONFIGS+=(mmproxy-rs)
if ((WITH_HAPROXY)); then
	[[ -n $HAPROXY ]] || die "--with-haproxy: haproxy not installed (scripts/deps.sh installs it)"
	for c in "${CONFIGS[@]}"; do
		if [[ $c == none ]]; then CONFIGS+=(haproxy); else CONFIGS+=("haproxy+$c"); fi
	done
fi

if [[ -n $ONLY_CONFIGS ]]; then
	kept=()
	for c in "${CONFIGS[@]}"; do
		[[ ",$ONLY_CONFIGS," == *",$c,"* ]] && kept+=("$c")
	done
	CONFIGS=("${kept[@]}")
	((${#CONFIGS[@]})) || die "--configs $ONLY_CONFIGS: none of them is available"
fi

skip() { # scenario config reason
	log "  skip $1 / $2: $3"
	printf '{"scenario":"%s","config":"%s","reason":"%s"}\n' "$1" "$2" "$3" >>"$SKIPS"
}

# Why a configuration cannot run a scenario, or nothing.
why_not() {
	local proto=$1 cfg=$2
	if [[ $proto == udp && $cfg == haproxy* ]]; then
		echo "HAProxy does not send PROXY headers over UDP"
	elif [[ $proto == udp && $cfg == mmproxy-bpf/* ]] && ((!MMP_UDP)); then
		echo "mmproxy-bpf has no UDP mode yet (its run --help says so)"
	elif [[ $proto == http && $cfg == haproxy* ]]; then
		echo "the http scenarios always run behind HAProxy (their 'none' is HAProxy alone)"
	elif [[ $proto == http && -n $HTTP_MISSING ]]; then
		echo "$HTTP_MISSING not installed (scripts/deps.sh installs them)"
	fi
}

# start_proxy CFG PROTO UPPORT: starts the proxy part of CFG; sets PROXY_PIDS.
PROXY_PIDS=()
start_proxy() {
	local cfg=$1 proto=$2 up=$3 inner=${1#haproxy+} pid
	PROXY_PIDS=()
	: >"$TMP/proxy.log"
	[[ $cfg == none ]] && return 0
	if [[ $cfg != haproxy ]]; then
		local -a cmd
		case $inner in
		mmproxy-bpf/* | mmproxy-bpf-base/*)
			local bin=$BIN
			[[ $inner == mmproxy-bpf-base/* ]] && bin=$BASE_BIN
			# --detach: a tc instance stopped with flows still spliced would leave
			# its filter on lo for a successor, and every later configuration
			# would pay for it per packet.
			local -a engine
			read -r -a engine <<<"$(engine_flags "${inner#*/}")"
			cmd=("$bin" run -l "127.0.0.1:$PORT_PROXY" -4 "127.0.0.1:$up" -6 "[::1]:$up"
				--listeners 2 "${engine[@]}" --pin-dir "$PIN_DIR" --detach -v 0)
			[[ $proto == udp ]] && cmd+=(-p udp)
			# Builds since issue 26 refuse UDP without -a unless told so; older ones lack the flag.
			# The help is read whole first: under pipefail, grep -q closing the pipe early made the
			# probe fail now and then (SIGPIPE), and that round's proxy refused to start.
			local help
			[[ $proto == udp ]] && help=$("$bin" run --help 2>&1) && [[ $help == *--udp-any-source* ]] &&
				cmd+=(--udp-any-source)
			;;
		go-mmproxy | go-mmproxy-head)
			local go=$GO_MMPROXY
			[[ $inner == go-mmproxy-head ]] && go=$GO_MMPROXY_HEAD
			cmd=("$go" -l "127.0.0.1:$PORT_PROXY" -4 "127.0.0.1:$up" -6 "[::1]:$up"
				-listeners 2 -v 0)
			[[ $proto == udp ]] && cmd+=(-p udp)
			;;
		mmproxy-rs)
			cmd=("$MMPROXY_RS" -l "127.0.0.1:$PORT_PROXY" -4 "127.0.0.1:$up" -6 "[::1]:$up" --listeners 2)
			[[ $proto == udp ]] && cmd+=(-p udp)
			;;
		esac
		(ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec nsenter --net="/run/netns/$NS" "${cmd[@]}") \
			>>"$TMP/proxy.log" 2>&1 &
		pid=$!
		PIDS+=("$pid")
		PROXY_PIDS+=("$pid")
		wait_listen "$NS" "$proto" "$PORT_PROXY" "$pid" || return 1
	fi
	if [[ $cfg == haproxy* ]]; then
		local server="server s 127.0.0.1:$PORT_PROXY send-proxy-v2"
		[[ $cfg == haproxy ]] && server="server s 127.0.0.1:$up"
		cat >"$TMP/haproxy.cfg" <<EOF
global
	maxconn $(( ($(ulimit -Hn) - 100) / 2 ))
	nbthread 2
defaults
	mode tcp
	timeout connect 5s
	timeout client 60s
	timeout server 60s
frontend fe
	bind 198.51.100.1:$PORT_HAPROXY
	default_backend be
backend be
	$server
EOF
		(ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec nsenter --net="/run/netns/$NS" "$HAPROXY" -db -f "$TMP/haproxy.cfg") \
			>>"$TMP/proxy.log" 2>&1 &
		pid=$!
		PIDS+=("$pid")
		PROXY_PIDS+=("$pid")
		wait_listen "$NS" tcp "$PORT_HAPROXY" "$pid" || return 1
	fi
	return 0
}

stop_proxy() {
	local pid keep=() p
	for pid in "${PROXY_PIDS[@]}"; do stop_pid "$pid"; done
	for p in "${PIDS[@]}"; do
		[[ " ${PROXY_PIDS[*]} " == *" $p "* ]] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
	PROXY_PIDS=()
	[[ -d $PIN_DIR ]] && rm -rf "$PIN_DIR"
	return 0
}

# ---- one run ------------------------------------------------------------

CLIENT_OFFSET=0
json_field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# run_one SCENARIO-LINE CFG ROUND
run_one() {
	local name tool args upkind hdr cfg=$2 round=$3 proto=tcp up target ns=$NS out json pcfg=$2
	IFS='|' read -r name tool args upkind hdr <<<"$1"
	[[ $tool == udpgen ]] && proto=udp
	# http: HAProxy in front of every configuration ("none" is HAProxy alone).
	if [[ $tool == wrk ]]; then
		pcfg=haproxy+$cfg
		[[ $cfg == none ]] && pcfg=haproxy
	fi
	up=${UP_PORT[$upkind]}
	local -a cmd watch=()
	read -r -a cmd <<<"$args"

	if ! start_proxy "$pcfg" "$proto" "$up"; then
		log "  $name / $cfg round $round: proxy did not start; log:"
		tail -n 5 "$TMP/proxy.log" >&2 || true
		printf '{"scenario":"%s","config":"%s","round":%d,"ok":false,"error":"proxy did not start"}\n' \
			"$name" "$cfg" "$round" >>"$RAW"
		stop_proxy
		return 0
	fi
	for pid in "${PROXY_PIDS[@]}"; do watch+=(--watch-pid "$pid"); done
	# http: the proxy's CPU, not HAProxy's (started last; alone for "none").
	if [[ $tool == wrk ]]; then
		watch=()
		[[ $cfg != none ]] && watch=(--watch-pid "${PROXY_PIDS[0]}")
	fi

	case $pcfg in
	none) target=127.0.0.1:$up; hdr=none ;;
	haproxy*) target=198.51.100.1:$PORT_HAPROXY; hdr=none; ns=$NSC ;;
	*) target=127.0.0.1:$PORT_PROXY ;;
	esac
	if [[ $tool == loadgen ]]; then
		cmd=("$TOOLS/loadgen" "${cmd[@]}" --threads "$LG_THREADS" -T "$DURATION" --warmup "$WARMUP"
			--proxy "$hdr" --client-range 203.0.113.0/24 --client-offset "$CLIENT_OFFSET" -q
			"${watch[@]}")
		# Connect from many loopback addresses: with one, TIME_WAIT on the
		# generator's own ports caps connrate and stalls connect() for
		# tens of milliseconds once earlier runs have used the ports.
		if [[ $ns == "$NS" ]]; then
			cmd+=(--source-range 127.1.0.0/16)
		else
			cmd+=(--source-range 198.51.100.128/25)
		fi
		cmd+=("$target")
	elif [[ $tool == wrk ]]; then
		# At least 5 s: the warm-up is a wrk run of its own, so the measured
		# connections are new and each pays its tc hand-off in the interval.
		cmd=(python3 "$BENCH_DIR/wrk_run.py" --ns "$NSC" "${cmd[@]}" -T "$((DURATION < 5 ? 5 : DURATION))" --warmup "$WARMUP"
			"${watch[@]}" "http://$target/")
		ns=$NS # wrk_run.py enters the client namespace itself
		# Connection: close reuses wrk's ports within seconds, and the proxy's
		# transparent bind to such a client ip:port would meet its own TIME_WAIT
		# socket: none in this namespace while it runs (bench/field.sh does the same).
		[[ $args == *--close* ]] && in_ns "$NS" sysctl -qw net.ipv4.tcp_max_tw_buckets=0
	else
		cmd=("$TOOLS/udpgen" "${cmd[@]}" --threads "$LG_THREADS" -T "$DURATION" --warmup "$WARMUP"
			--proxy "$hdr" --client-range 203.0.113.0/24 --client-offset "$CLIENT_OFFSET" -q
			"${watch[@]}")
		[[ $upkind == udpsink ]] && cmd+=(--sink "127.0.0.1:$up" --sink "[::1]:$up")
		cmd+=("$target")
	fi
	out=$TMP/out.txt
	if ! in_ns "$ns" "${cmd[@]}" >"$out" 2>&1; then
		log "  $name / $cfg round $round: generator failed:"
		tail -n 5 "$out" >&2
	fi
	[[ $tool == wrk ]] && in_ns "$NS" sysctl -qw net.ipv4.tcp_max_tw_buckets="$TW_BUCKETS"
	stop_proxy
	json=$(sed -n 's/^JSON //p' "$out" | tail -n 1)
	if [[ -z $json ]]; then
		printf '{"scenario":"%s","config":"%s","round":%d,"ok":false,"error":"no result"}\n' \
			"$name" "$cfg" "$round" >>"$RAW"
		return 0
	fi
	printf '{"scenario":"%s","config":"%s","round":%d,"ok":true,"result":%s}\n' \
		"$name" "$cfg" "$round" "$json" >>"$RAW"
	# Fresh client addresses next time: the last run's tuples may sit in TIME_WAIT.
	if [[ $tool == loadgen ]]; then
		CLIENT_OFFSET=$(json_field "$json" client_next)
	elif [[ $tool == udpgen ]]; then
		CLIENT_OFFSET=$((CLIENT_OFFSET + $(json_field "$json" flows)))
	fi
	python3 "$BENCH_DIR/report.py" --line "$RAW"
}

# ---- main ---------------------------------------------------------------

# The http scenarios need a client namespace, nginx, HAProxy and wrk.
WANT_HTTP=0
[[ ,$SCENARIOS, == *,http-* ]] && WANT_HTTP=1
HTTP_MISSING=
for t in wrk nginx haproxy; do command -v $t >/dev/null || HTTP_MISSING+="${HTTP_MISSING:+, }$t"; done
[[ -n $HTTP_MISSING ]] && WANT_HTTP=0

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
setup_ns
TW_BUCKETS=$(in_ns "$NS" sysctl -n net.ipv4.tcp_max_tw_buckets)
start_upstreams

# How busy the machine is without us: other tenants skew every number.
BACKGROUND=$(background_busy_cpus)
if awk -v b="$BACKGROUND" 'BEGIN { exit !(b > 0.2) }'; then
	log "run.sh: warning: $BACKGROUND CPUs were busy before the run started (other load): expect noise"
fi

HOST=$(hostname -s)
DATE=$(date +%Y-%m-%d-%H%M)
START=$(date +%s)
log "run.sh: $PROFILE, $ROUNDS rounds, ${DURATION}s + ${WARMUP}s warm-up per run, $(nproc) CPUs"
log "run.sh: configurations: ${CONFIGS[*]}"

IFS=, read -r -a WANT <<<"$SCENARIOS"
for want in "${WANT[@]}"; do
	line=
	for l in "${SCENARIO_TABLE[@]}"; do [[ ${l%%|*} == "$want" ]] && line=$l; done
	[[ -n $line ]] || die "unknown scenario '$want' (have: $ALL_SCENARIOS)"
	proto=tcp
	[[ $line == *"|udpgen|"* ]] && proto=udp
	[[ $line == *"|wrk|"* ]] && proto=http
	runnable=()
	for cfg in "${CONFIGS[@]}"; do
		reason=$(why_not "$proto" "$cfg")
		if [[ -n $reason ]]; then skip "$want" "$cfg" "$reason"; else runnable+=("$cfg"); fi
	done
	log "== $want"
	for ((round = 1; round <= ROUNDS; round++)); do
		for cfg in "${runnable[@]}"; do
			run_one "$line" "$cfg" "$round"
		done
	done
done

mkdir -p "$OUT_DIR"
BASE=$OUT_DIR/$DATE-$HOST
PNG_ARGS=()
((PLOT)) && PNG_ARGS=(--png "$BASE.png")
python3 "$BENCH_DIR/report.py" --raw "$RAW" --skips "$SKIPS" --out "$BASE.json" "${PNG_ARGS[@]}" \
	--meta "profile=$PROFILE" --meta "rounds=$ROUNDS" --meta "duration_s=$DURATION" \
	--meta "warmup_s=$WARMUP" --meta "loadgen_threads=$LG_THREADS" \
	--meta "upstream_threads=$UP_THREADS" --meta "engines=$ENGINES" \
	--meta "command=bench/run.sh $ORIG_ARGS" --meta "elapsed_s=$(($(date +%s) - START))" \
	--meta "go_mmproxy=$GO_MMPROXY" --meta "mmproxy_bpf=$BIN" \
	--meta "background_busy_cpus=$BACKGROUND"
if ((PLOT)) && [[ -f $BASE.png ]]; then
	cp "$BASE.png" "$OUT_DIR/latest.png"
	log "run.sh: chart $BASE.png (copied to $OUT_DIR/latest.png)"
fi
log "run.sh: results $BASE.json"
if ((FIELD)); then
	bash "$BENCH_DIR/field.sh" --rounds "$ROUNDS" --out "$OUT_DIR"
fi
