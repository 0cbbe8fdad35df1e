// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <unistd.h>
#include "lib/config.h"
#include "lib/log.h"
#include "mmp_maps.h"
#include "lib/sockaddr.h"

enum long_only_opts {
	OPT_LISTENERS = 1000,
	OPT_HEADER_TIMEOUT,
	OPT_CONNECT_TIMEOUT,
	OPT_ENGINE,
	OPT_PIN_DIR,
	OPT_TABLE,
	OPT_MAX_QUEUED,
	OPT_UDP_HEADER,
	OPT_IFACE,
	OPT_TC_MAX_FLOWS,
	OPT_TC_IDLE,
	OPT_TC_HANDOFF_DELAY,
	OPT_DETACH,
	OPT_HELP,
};

static const struct option long_opts[] = {
	{ "listen-addr", required_argument, NULL, 'l' },
	{ "ipv4", required_argument, NULL, '4' },
	{ "ipv6", required_argument, NULL, '6' },
	{ "allowed-subnets", required_argument, NULL, 'a' },
	{ "close-after", required_argument, NULL, 'c' },
	{ "protocol", required_argument, NULL, 'p' },
	{ "mark", required_argument, NULL, 'm' },
	{ "verbose", required_argument, NULL, 'v' },
	{ "listeners", required_argument, NULL, OPT_LISTENERS },
	{ "header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "engine", required_argument, NULL, OPT_ENGINE },
	{ "pin-dir", required_argument, NULL, OPT_PIN_DIR },
	{ "table", required_argument, NULL, OPT_TABLE },
	{ "max-queued", required_argument, NULL, OPT_MAX_QUEUED },
	{ "udp-header", required_argument, NULL, OPT_UDP_HEADER },
	{ "iface", required_argument, NULL, OPT_IFACE },
	{ "tc-max-flows", required_argument, NULL, OPT_TC_MAX_FLOWS },
	{ "tc-idle-timeout", required_argument, NULL, OPT_TC_IDLE },
	{ "tc-handoff-delay", required_argument, NULL, OPT_TC_HANDOFF_DELAY },
	{ "detach", no_argument, NULL, OPT_DETACH },
	{ "help", no_argument, NULL, OPT_HELP },
	{ 0 },
};

void mmp_usage(FILE *out)
{
	fprintf(out,
		"Usage: mmproxy-bpf [run] [options]      proxy (the default command)\n"
		"       mmproxy-bpf check [options]      verify capabilities, bpffs, routing; print fixes\n"
		"       mmproxy-bpf setup-routing [--table N]    add the ip rules/routes (idempotent)\n"
		"       mmproxy-bpf cleanup-routing [--table N]  remove them (idempotent)\n"
		"       mmproxy-bpf stats [--pin-dir DIR]        counters and flows from the pinned maps\n"
		"       mmproxy-bpf cleanup [--pin-dir DIR]      remove filters and pins left by a stopped instance\n"
		"       mmproxy-bpf version\n"
		"\n"
		"Options (go-mmproxy compatible; single-dash long forms such as -listeners work too):\n"
		"  -l, --listen-addr ADDR:PORT     where the load balancer connects (default 0.0.0.0:8443)\n"
		"  -4, --ipv4 ADDR:PORT            upstream for IPv4 clients (default 127.0.0.1:443)\n"
		"  -6, --ipv6 [ADDR]:PORT          upstream for IPv6 clients (default [::1]:443)\n"
		"  -a, --allowed-subnets FILE      allowed load-balancer subnets, one CIDR per line\n"
		"                                  (default: allow every source, with a warning)\n"
		"  -c, --close-after SEC           UDP idle flow timeout (default 60)\n"
		"  -p, --protocol tcp|udp          (default tcp)\n"
		"      --udp-header auto|every|first|spp  UDP framing (default auto): a PROXY v2 header on every\n"
		"                                  datagram (udppp), on a flow's first only (Spectrum), or\n"
		"                                  Cloudflare SPP on every datagram and reply\n"
		"  -m, --mark N                    SO_MARK for upstream sockets (default 0: none)\n"
		"      --listeners N               listener threads with SO_REUSEPORT (default: cores)\n"
		"  -v, --verbose 0|1|2             0 errors, 1 per-connection errors, 2 every state change\n"
		"      --header-timeout SEC        close connections whose PROXY header is incomplete (default 5)\n"
		"      --connect-timeout SEC       upstream connect timeout (default 5)\n"
		"      --engine auto|tc|splice|sockmap  data-path engine (default auto: tc for every eligible\n"
		"                                  flow, splice for the others). UDP: auto = in-kernel fast\n"
		"                                  path with the userspace relay as fallback, tc = fast path\n"
		"                                  required, splice = userspace relay only\n"
		"      --iface IF[,IF...]          tc: interfaces that carry a remote load balancer's traffic\n"
		"      --tc-max-flows N            tc: flows spliced in the kernel at once (default 65536;\n"
		"                                  never evicted: past it, new flows stay on splice)\n"
		"      --tc-idle-timeout SEC       tc: forget a spliced flow after SEC without any packet\n"
		"                                  (keepalives count; default 7200, 0 = never)\n"
		"      --tc-handoff-delay MS       tc: a new flow runs on splice for MS before its hand-off\n"
		"                                  to the kernel, so short connections skip its cost\n"
		"                                  (default 20, 0 = at once)\n"
		"      --detach                    tc: on exit remove filters and pins even if flows remain\n"
		"      --max-queued BYTES          sockmap: bytes queued per flow and direction before the\n"
		"                                  sender is slowed by TCP flow control (default 4194304)\n"
		"      --pin-dir DIR               bpffs directory for pinned maps (default " MMP_PIN_DIR_DEFAULT ")\n"
		"      --table N                   routing table for check/setup-routing (default 123)\n"
		"      --help                      this text\n");
}

const char *mmp_engine_name(enum mmp_engine e)
{
	switch (e) {
	case MMP_ENGINE_AUTO:
		return "auto";
	case MMP_ENGINE_SPLICE:
		return "splice";
	case MMP_ENGINE_SOCKMAP:
		return "sockmap";
	case MMP_ENGINE_TC:
		return "tc";
	}
	return "?";
}

/* Parse a decimal in [min, max]. Returns 0 or -EINVAL. */
static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int bad_option(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "mmproxy-bpf: invalid value '%s' for %s: %s (see --help)\n", val, opt, why);
	return -EINVAL;
}

static int parse_addr_opt(const char *opt, const char *val, struct sockaddr_storage *ss, int family)
{
	const char *reason;

	if (mmp_parse_hostport(val, ss, &reason))
		return bad_option(opt, val, reason);
	if (family && ss->ss_family != family)
		return bad_option(opt, val, family == AF_INET ? "expected an IPv4 address such as 127.0.0.1:443"
							      : "expected an IPv6 address such as [::1]:443");
	return 0;
}

static int parse_command(const char *word, enum mmp_command *cmd)
{
	static const struct {
		const char *name;
		enum mmp_command cmd;
	} cmds[] = {
		{ "run", MMP_CMD_RUN },
		{ "check", MMP_CMD_CHECK },
		{ "setup-routing", MMP_CMD_SETUP_ROUTING },
		{ "cleanup-routing", MMP_CMD_CLEANUP_ROUTING },
		{ "stats", MMP_CMD_STATS },
		{ "cleanup", MMP_CMD_CLEANUP },
		{ "version", MMP_CMD_VERSION },
		{ "help", MMP_CMD_HELP },
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (!strcmp(word, cmds[i].name)) {
			*cmd = cmds[i].cmd;
			return 0;
		}
	}
	fprintf(stderr, "mmproxy-bpf: unknown command '%s' (commands: run, check, stats, cleanup, setup-routing, cleanup-routing, version)\n",
		word);
	return -EINVAL;
}

static void set_defaults(struct mmp_config *cfg)
{
	const char *reason;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(cfg, 0, sizeof(*cfg));
	cfg->command = MMP_CMD_RUN;
	mmp_parse_hostport("0.0.0.0:8443", &cfg->listen, &reason);
	mmp_parse_hostport("127.0.0.1:443", &cfg->target4, &reason);
	mmp_parse_hostport("[::1]:443", &cfg->target6, &reason);
	cfg->close_after_s = 60;
	cfg->protocol = IPPROTO_TCP;
	cfg->listeners = cores > 0 ? (int)cores : 1;
	cfg->header_timeout_ms = 5000;
	cfg->connect_timeout_ms = 5000;
	cfg->engine = MMP_ENGINE_AUTO;
	cfg->pin_dir = MMP_PIN_DIR_DEFAULT;
	cfg->route_table = 123;
	cfg->max_queued = 4 << 20;
	cfg->tc_max_flows = 65536;
	cfg->tc_idle_timeout_s = 7200;
	cfg->tc_handoff_delay_ms = 20;
}

int mmp_config_parse(int argc, char **argv, struct mmp_config *cfg)
{
	long v;
	int c;

	set_defaults(cfg);
	if (argc > 1 && argv[1][0] != '-') {
		if (parse_command(argv[1], &cfg->command))
			return -EINVAL;
		argv++;
		argc--;
	}

	optind = 1;
	opterr = 0; /* we print our own errors */
	/* getopt_long_only: go-mmproxy unit files say -listeners 4, Go-style. */
	while ((c = getopt_long_only(argc, argv, ":l:4:6:a:c:p:m:v:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (parse_addr_opt("-l", optarg, &cfg->listen, 0))
				return -EINVAL;
			break;
		case '4':
			if (parse_addr_opt("-4", optarg, &cfg->target4, AF_INET))
				return -EINVAL;
			break;
		case '6':
			if (parse_addr_opt("-6", optarg, &cfg->target6, AF_INET6))
				return -EINVAL;
			break;
		case 'a':
			cfg->allowed_path = optarg;
			break;
		case 'c':
			if (parse_long(optarg, 1, 86400 * 365, &v))
				return bad_option("-c", optarg, "seconds from 1 upwards");
			cfg->close_after_s = (int)v;
			break;
		case 'p':
			if (!strcmp(optarg, "tcp"))
				cfg->protocol = IPPROTO_TCP;
			else if (!strcmp(optarg, "udp"))
				cfg->protocol = IPPROTO_UDP;
			else
				return bad_option("-p", optarg, "expected tcp or udp");
			break;
		case 'm':
			if (parse_long(optarg, 0, UINT32_MAX, &v))
				return bad_option("-m", optarg, "expected a mark from 0 to 4294967295");
			cfg->mark = (uint32_t)v;
			break;
		case 'v':
			if (parse_long(optarg, 0, 2, &v))
				return bad_option("-v", optarg, "expected 0, 1 or 2");
			mmp_verbosity = (int)v;
			break;
		case OPT_LISTENERS:
			if (parse_long(optarg, 1, 1024, &v))
				return bad_option("--listeners", optarg, "expected 1 to 1024");
			cfg->listeners = (int)v;
			break;
		case OPT_HEADER_TIMEOUT:
			if (parse_long(optarg, 1, 3600, &v))
				return bad_option("--header-timeout", optarg, "seconds from 1 to 3600");
			cfg->header_timeout_ms = (int)v * 1000;
			break;
		case OPT_CONNECT_TIMEOUT:
			if (parse_long(optarg, 1, 3600, &v))
				return bad_option("--connect-timeout", optarg, "seconds from 1 to 3600");
			cfg->connect_timeout_ms = (int)v * 1000;
			break;
		case OPT_ENGINE:
			if (!strcmp(optarg, "auto"))
				cfg->engine = MMP_ENGINE_AUTO;
			else if (!strcmp(optarg, "splice"))
				cfg->engine = MMP_ENGINE_SPLICE;
			else if (!strcmp(optarg, "sockmap"))
				cfg->engine = MMP_ENGINE_SOCKMAP;
			else if (!strcmp(optarg, "tc"))
				cfg->engine = MMP_ENGINE_TC;
			else
				return bad_option("--engine", optarg, "expected auto, tc, splice or sockmap");
			break;
		case OPT_IFACE:
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				if (cfg->n_ifaces >= (int)(sizeof(cfg->ifaces) / sizeof(cfg->ifaces[0])))
					return bad_option("--iface", tok, "at most 32 interfaces");
				cfg->ifaces[cfg->n_ifaces++] = tok;
			}
			break;
		case OPT_TC_MAX_FLOWS:
			if (parse_long(optarg, 16, 16 << 20, &v))
				return bad_option("--tc-max-flows", optarg, "expected 16 to 16777216");
			cfg->tc_max_flows = (int)v;
			break;
		case OPT_TC_IDLE:
			if (parse_long(optarg, 0, 86400 * 30, &v))
				return bad_option("--tc-idle-timeout", optarg, "seconds, 0 for never");
			cfg->tc_idle_timeout_s = (int)v;
			break;
		case OPT_TC_HANDOFF_DELAY:
			if (parse_long(optarg, 0, 60000, &v))
				return bad_option("--tc-handoff-delay", optarg, "milliseconds, 0 to 60000");
			cfg->tc_handoff_delay_ms = (int)v;
			break;
		case OPT_DETACH:
			cfg->detach = true;
			break;
		case OPT_UDP_HEADER:
			if (!strcmp(optarg, "auto"))
				cfg->udp_header = MMP_UDP_HDR_AUTO;
			else if (!strcmp(optarg, "every"))
				cfg->udp_header = MMP_UDP_HDR_EVERY;
			else if (!strcmp(optarg, "first"))
				cfg->udp_header = MMP_UDP_HDR_FIRST;
			else if (!strcmp(optarg, "spp"))
				cfg->udp_header = MMP_UDP_HDR_SPP;
			else
				return bad_option("--udp-header", optarg, "expected auto, every, first or spp");
			break;
		case OPT_MAX_QUEUED:
			if (parse_long(optarg, 65536, 1L << 40, &v))
				return bad_option("--max-queued", optarg, "bytes from 65536 upwards");
			cfg->max_queued = (uint64_t)v;
			break;
		case OPT_PIN_DIR:
			cfg->pin_dir = optarg;
			break;
		case OPT_TABLE:
			if (parse_long(optarg, 1, 252, &v))
				return bad_option("--table", optarg, "expected a table number from 1 to 252");
			cfg->route_table = (int)v;
			break;
		case 'h':
		case OPT_HELP:
			cfg->command = MMP_CMD_HELP;
			break;
		case ':':
			fprintf(stderr, "mmproxy-bpf: option %s needs a value (see --help)\n", argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "mmproxy-bpf: unknown option '%s' (see --help)\n", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mmproxy-bpf: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}
