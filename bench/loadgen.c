// SPDX-License-Identifier: GPL-2.0
/*
 * loadgen: options, worker start-up, the phase clock (warm-up, measure,
 * stop), the progress line, and the CPU samples around the measurement.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "cpustat.h"
#include "loadgen.h"
#include "pattern.h"
#include "proxyhdr.h"

#define RAMP_GRACE_S 10.0 /* extra wait for all connections before measuring */

int lg_phase = LG_WARMUP;
static uint64_t next_client;
/*
 * SIGTERM or SIGINT: measuring ends now and the report is printed, so a
 * driver script can end a run (hold: -T 100000) once it measured what it
 * wanted while the connections were held.
 */
static volatile sig_atomic_t stop_early;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_early = 1;
}

uint64_t lg_next_client(void)
{
	return __atomic_fetch_add(&next_client, 1, __ATOMIC_RELAXED);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: loadgen [options] ADDR:PORT\n"
		"  -m, --mode MODE          pingpong (default), bulk, connrate, stream (both ways at once,\n"
		"                           echoed), hold (keep -c connections open, each sends one\n"
		"                           message per --interval; prints 'READY N' once all are open)\n"
		"  -c, --connections N      connections kept open (connrate: in flight) [50]\n"
		"      --connect-rate R     new connections per second, 0 = unlimited [0]\n"
		"  -T, --duration S         measured seconds [10]\n"
		"      --warmup S           seconds before measuring [1]\n"
		"      --threads N          worker threads [online CPUs]\n"
		"      --proxy KIND         PROXY header per connection: v1, v2, none [none]\n"
		"      --client-range CIDR  client addresses for the header [203.0.113.0/24]\n"
		"      --client-offset N    first client number (skip tuples used before) [0]\n"
		"      --source-range CIDR  connect from these local addresses in turn, e.g.\n"
		"                           127.0.0.0/8, for more than one port range of\n"
		"                           connections per second [kernel's choice]\n"
		"  -s, --size N             message size, pingpong and connrate [64]\n"
		"      --pipeline N         messages in flight per connection [1]\n"
		"      --interval S         hold: seconds between one connection's messages [5]\n"
		"      --direction DIR      bulk: up, down, both [up]\n"
		"      --verify, --no-verify  check received bytes [on, off for bulk]; bulk\n"
		"                           expects 'upstream -m source' (pattern from offset 0)\n"
		"      --watch-pid PID      report CPU seconds of PID (repeatable, summed)\n"
		"  -q, --quiet              no progress line even on a terminal\n"
		"Prints a human summary and one line 'JSON {...}'.\n");
}

enum {
	OPT_CONNECT_RATE = 256,
	OPT_WARMUP,
	OPT_THREADS,
	OPT_PROXY,
	OPT_CLIENT_RANGE,
	OPT_CLIENT_OFFSET,
	OPT_SOURCE_RANGE,
	OPT_PIPELINE,
	OPT_INTERVAL,
	OPT_DIRECTION,
	OPT_VERIFY,
	OPT_NO_VERIFY,
	OPT_WATCH,
};

static const struct option options[] = {
	{ "mode", required_argument, NULL, 'm' },
	{ "connections", required_argument, NULL, 'c' },
	{ "connect-rate", required_argument, NULL, OPT_CONNECT_RATE },
	{ "duration", required_argument, NULL, 'T' },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "proxy", required_argument, NULL, OPT_PROXY },
	{ "client-range", required_argument, NULL, OPT_CLIENT_RANGE },
	{ "client-offset", required_argument, NULL, OPT_CLIENT_OFFSET },
	{ "source-range", required_argument, NULL, OPT_SOURCE_RANGE },
	{ "size", required_argument, NULL, 's' },
	{ "pipeline", required_argument, NULL, OPT_PIPELINE },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "direction", required_argument, NULL, OPT_DIRECTION },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "no-verify", no_argument, NULL, OPT_NO_VERIFY },
	{ "watch-pid", required_argument, NULL, OPT_WATCH },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static int parse_args(int argc, char **argv, struct lg_config *cfg)
{
	int opt, verify = -1, quiet = 0;
	double v;

	*cfg = (struct lg_config){
		.mode = LG_PINGPONG, .proxy = HDR_NONE, .conns = 50, .duration = 10,
		.warmup = 1, .threads = cli_default_threads(), .size = 64,
		.pipeline = 1, .direction = LG_UP, .interval = 5,
	};
	while ((opt = getopt_long(argc, argv, "m:c:T:s:qh", options, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (!strcmp(optarg, "pingpong"))
				cfg->mode = LG_PINGPONG;
			else if (!strcmp(optarg, "bulk"))
				cfg->mode = LG_BULK;
			else if (!strcmp(optarg, "connrate"))
				cfg->mode = LG_CONNRATE;
			else if (!strcmp(optarg, "stream"))
				cfg->mode = LG_STREAM;
			else if (!strcmp(optarg, "hold"))
				cfg->mode = LG_HOLD;
			else
				goto bad;
			break;
		case 'c':
			if (cli_num(optarg, 1, 1000000, &v))
				goto bad;
			cfg->conns = (unsigned int)v;
			break;
		case OPT_CONNECT_RATE:
			if (cli_num(optarg, 0, 1e9, &cfg->connect_rate))
				goto bad;
			break;
		case 'T':
			if (cli_num(optarg, 0.1, 1e6, &cfg->duration))
				goto bad;
			break;
		case OPT_WARMUP:
			if (cli_num(optarg, 0, 1e6, &cfg->warmup))
				goto bad;
			break;
		case OPT_THREADS:
			if (cli_num(optarg, 1, 1024, &v))
				goto bad;
			cfg->threads = (unsigned int)v;
			break;
		case OPT_PROXY:
			cfg->proxy = hdr_kind_parse(optarg);
			if (cfg->proxy != HDR_NONE && cfg->proxy != HDR_V1 && cfg->proxy != HDR_V2)
				goto bad;
			break;
		case OPT_CLIENT_RANGE:
			if (cidr_parse(optarg, &cfg->clients))
				goto bad;
			cfg->have_clients = true;
			break;
		case OPT_CLIENT_OFFSET:
			if (cli_num(optarg, 0, 1e18, &v))
				goto bad;
			cfg->client_offset = (uint64_t)v;
			break;
		case OPT_SOURCE_RANGE:
			if (cidr_parse(optarg, &cfg->sources))
				goto bad;
			cfg->have_sources = true;
			break;
		case 's':
			if (cli_num(optarg, 1, 1 << 30, &v))
				goto bad;
			cfg->size = (unsigned int)v;
			break;
		case OPT_PIPELINE:
			if (cli_num(optarg, 1, 1 << 20, &v))
				goto bad;
			cfg->pipeline = (unsigned int)v;
			break;
		case OPT_INTERVAL:
			if (cli_num(optarg, 0.01, 3600, &cfg->interval))
				goto bad;
			break;
		case OPT_DIRECTION:
			if (!strcmp(optarg, "up"))
				cfg->direction = LG_UP;
			else if (!strcmp(optarg, "down"))
				cfg->direction = LG_DOWN;
			else if (!strcmp(optarg, "both"))
				cfg->direction = LG_BOTH;
			else
				goto bad;
			break;
		case OPT_VERIFY:
			verify = 1;
			break;
		case OPT_NO_VERIFY:
			verify = 0;
			break;
		case OPT_WATCH:
			if (cli_watch_pid(optarg, cfg->watch, &cfg->nwatch, LG_MAX_WATCH))
				goto bad;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "loadgen: expected one target ADDR:PORT\n");
		usage(stderr);
		return -EINVAL;
	}
	if (addr_parse(argv[optind], &cfg->target)) {
		fprintf(stderr, "loadgen: bad target '%s' (want 1.2.3.4:80 or [::1]:80)\n",
			argv[optind]);
		return -EINVAL;
	}
	if (cfg->have_sources && cfg->sources.family != cfg->target.ss_family) {
		fprintf(stderr, "loadgen: --source-range and the target differ in family\n");
		return -EINVAL;
	}
	if (cfg->mode == LG_HOLD && cfg->pipeline != 1) {
		fprintf(stderr, "loadgen: --pipeline must be 1 with -m hold (one message in flight per connection)\n");
		return -EINVAL;
	}
	cfg->verify = verify < 0 ? cfg->mode != LG_BULK : verify;
	cfg->progress = !quiet && isatty(STDOUT_FILENO);
	if (cfg->threads > cfg->conns)
		cfg->threads = cfg->conns;
	return 0;
bad:
	fprintf(stderr, "loadgen: bad value for option %s: '%s'\n", argv[optind - 1],
		optarg ? optarg : "");
	return -EINVAL;
}

/* The file-descriptor limit must cover every connection. */
static void raise_nofile(unsigned int conns)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < rl.rlim_max && rl.rlim_cur < (rlim_t)conns + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void sum_stats(const struct lg_thread *t, unsigned int n, struct lg_stats *s)
{
	unsigned int i;

	memset(s, 0, offsetof(struct lg_stats, lat));
	for (i = 0; i < n; i++) {
		const struct lg_stats *x = &t[i].stats;

		s->tx_bytes += __atomic_load_n(&x->tx_bytes, __ATOMIC_RELAXED);
		s->rx_bytes += __atomic_load_n(&x->rx_bytes, __ATOMIC_RELAXED);
		s->msgs += __atomic_load_n(&x->msgs, __ATOMIC_RELAXED);
		s->conns_opened += __atomic_load_n(&x->conns_opened, __ATOMIC_RELAXED);
		s->connect_errors += __atomic_load_n(&x->connect_errors, __ATOMIC_RELAXED);
		s->connect_refused += __atomic_load_n(&x->connect_refused, __ATOMIC_RELAXED);
		s->connect_reset += __atomic_load_n(&x->connect_reset, __ATOMIC_RELAXED);
		s->io_errors += __atomic_load_n(&x->io_errors, __ATOMIC_RELAXED);
		s->io_eof += __atomic_load_n(&x->io_eof, __ATOMIC_RELAXED);
		s->io_reset += __atomic_load_n(&x->io_reset, __ATOMIC_RELAXED);
		s->verified_bytes += __atomic_load_n(&x->verified_bytes, __ATOMIC_RELAXED);
		s->verify_errors += __atomic_load_n(&x->verify_errors, __ATOMIC_RELAXED);
		s->alive += __atomic_load_n(&x->alive, __ATOMIC_RELAXED);
	}
}

static uint64_t open_conns(const struct lg_thread *t, unsigned int n)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		sum += __atomic_load_n(&t[i].open_conns, __ATOMIC_RELAXED);
	return sum;
}

struct progress {
	struct lg_stats last;
	uint64_t last_t;
	uint64_t t0;
};

static void progress_tick(const struct lg_config *cfg, const struct lg_thread *t,
			  struct progress *p, uint64_t now, const char *phase)
{
	struct lg_stats s;
	double dt = (double)(now - p->last_t) / 1e9;

	sum_stats(t, cfg->threads, &s);
	/* Counters restart at zero when measuring starts. */
	if (s.tx_bytes < p->last.tx_bytes || s.rx_bytes < p->last.rx_bytes ||
	    s.msgs < p->last.msgs)
		memset(&p->last, 0, offsetof(struct lg_stats, lat));
	if (cfg->progress && dt > 0) {
		printf("\r[%4.0fs] %-9s up %9.2f MB/s  down %9.2f MB/s  %10.0f msg/s  "
		       "%6llu open  %llu err ",
		       (double)(now - p->t0) / 1e9, phase,
		       (double)(s.tx_bytes - p->last.tx_bytes) / dt / 1e6,
		       (double)(s.rx_bytes - p->last.rx_bytes) / dt / 1e6,
		       (double)(s.msgs - p->last.msgs) / dt,
		       (unsigned long long)open_conns(t, cfg->threads),
		       (unsigned long long)(s.connect_errors + s.io_errors + s.verify_errors));
		fflush(stdout);
	}
	p->last = s;
	p->last_t = now;
}

/* Sleeps until `until`, drawing the progress line once a second. */
static void wait_until(const struct lg_config *cfg, const struct lg_thread *t,
		       struct progress *p, uint64_t until, const char *phase)
{
	uint64_t now = now_ns(), next;

	while (now < until && !stop_early) {
		next = p->last_t + NSEC_PER_SEC;
		if (!cfg->progress || next > until)
			next = until;
		/* sleep_until_ns() sleeps on through signals: look at stop_early often. */
		if (next > now + 100 * NSEC_PER_MSEC)
			next = now + 100 * NSEC_PER_MSEC;
		sleep_until_ns(next);
		now = now_ns();
		if (now >= p->last_t + NSEC_PER_SEC)
			progress_tick(cfg, t, p, now, phase);
	}
}

int main(int argc, char **argv)
{
	struct cpu_sample c0, c1;
	struct lg_result res = { 0 };
	struct progress prog = { 0 };
	struct lg_config cfg;
	struct lg_thread *t;
	uint64_t t_start, t_end, deadline;
	double grace;
	unsigned int i;
	int err;

	if (parse_args(argc, argv, &cfg))
		return 2;
	raise_nofile(cfg.conns);
	signal(SIGPIPE, SIG_IGN); /* belt and braces: every send uses MSG_NOSIGNAL */
	signal(SIGTERM, on_stop_signal);
	signal(SIGINT, on_stop_signal);
	pattern_init();
	next_client = cfg.client_offset;
	t = calloc(cfg.threads, sizeof(*t));
	if (!t)
		return 1;
	for (i = 0; i < cfg.threads; i++) {
		t[i].idx = i;
		t[i].cfg = &cfg;
		t[i].target_conns = cfg.conns / cfg.threads + (i < cfg.conns % cfg.threads);
		t[i].rate = cfg.connect_rate * t[i].target_conns / cfg.conns;
		hist_init(&t[i].stats.lat);
		err = pthread_create(&t[i].tid, NULL, lg_worker, &t[i]);
		if (err) {
			fprintf(stderr, "loadgen: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}

	prog.t0 = prog.last_t = now_ns();
	wait_until(&cfg, t, &prog, prog.t0 + (uint64_t)(cfg.warmup * 1e9), "warm-up");
	if (cfg.mode != LG_CONNRATE) {
		/*
		 * Measure with every connection up, but never wait for ever. A
		 * paced ramp (hold: tens of thousands at --connect-rate) takes
		 * conns / rate by itself.
		 */
		grace = RAMP_GRACE_S;
		if (cfg.connect_rate > 0)
			grace += cfg.conns / cfg.connect_rate;
		deadline = now_ns() + (uint64_t)(grace * 1e9);
		while (open_conns(t, cfg.threads) < cfg.conns && now_ns() < deadline && !stop_early)
			wait_until(&cfg, t, &prog, now_ns() + 10 * NSEC_PER_MSEC, "ramp-up");
	}
	if (cfg.mode == LG_HOLD) {
		/* For a driver script that measures while the connections are held. */
		printf("READY %llu\n", (unsigned long long)open_conns(t, cfg.threads));
		fflush(stdout);
	}
	cpustat_sample(cfg.watch, cfg.nwatch, &c0);
	t_start = now_ns();
	__atomic_store_n(&lg_phase, LG_MEASURE, __ATOMIC_RELEASE);
	/* The workers zero their counters now: so does the progress line. */
	memset(&prog.last, 0, offsetof(struct lg_stats, lat));
	prog.last_t = t_start;
	wait_until(&cfg, t, &prog, t_start + (uint64_t)(cfg.duration * 1e9), "measuring");
	res.open_at_end = open_conns(t, cfg.threads);
	__atomic_store_n(&lg_phase, LG_STOP, __ATOMIC_RELEASE);
	t_end = now_ns();
	cpustat_sample(cfg.watch, cfg.nwatch, &c1);
	if (cfg.progress)
		printf("\n");

	for (i = 0; i < cfg.threads; i++) {
		pthread_join(t[i].tid, NULL);
		if (t[i].error) {
			fprintf(stderr, "loadgen: worker %u: %s\n", i, strerror(t[i].error));
			return 1;
		}
	}
	sum_stats(t, cfg.threads, &res.total);
	hist_init(&res.total.lat);
	for (i = 0; i < cfg.threads; i++)
		hist_merge(&res.total.lat, &t[i].stats.lat);
	res.client_next = __atomic_load_n(&next_client, __ATOMIC_RELAXED);
	res.elapsed = (double)(t_end - t_start) / 1e9;
	cpustat_used(&c0, &c1, cfg.nwatch, &res.cpu);
	lg_report(&cfg, &res);
	free(t);
	return 0;
}
