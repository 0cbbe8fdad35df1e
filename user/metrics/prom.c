// SPDX-License-Identifier: GPL-2.0
#include <string.h>
#include "metrics/prom.h"

/* Counters of the X-macro lists that are levels, not running totals. */
static bool is_gauge(enum mmp_family f, const char *name)
{
	return (f == MMP_FAM_TCP && !strcmp(name, "active")) ||
	       (f == MMP_FAM_UDP && (!strcmp(name, "flows_active") || !strcmp(name, "flows_fast")));
}

static void head(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(FILE *out, const char *name, const char *labels, uint64_t v)
{
	fprintf(out, "%s%s%s%s %llu\n", name, labels ? "{" : "", labels ? labels : "", labels ? "}" : "",
		(unsigned long long)v);
}

/* mmproxy_<family>_<name>[_total] for every entry of a family's list. */
static void family(FILE *out, const struct mmp_snapshot *s, enum mmp_family f)
{
	const struct mmp_family_desc *d = &mmp_families[f];
	char name[128];

	if (!s->has[f])
		return;
	for (unsigned int i = 0; i < d->n; i++) {
		bool gauge = is_gauge(f, d->c[i].name);

		snprintf(name, sizeof(name), "mmproxy_%s_%s%s", d->key, d->c[i].name, gauge ? "" : "_total");
		head(out, name, gauge ? "gauge" : "counter", d->c[i].help);
		sample(out, name, NULL, s->v[f][i]);
	}
}

static void tcp_series(FILE *out, const struct mmp_snapshot *s)
{
	const uint64_t *t = s->v[MMP_FAM_TCP];

	if (!s->has[MMP_FAM_TCP])
		return;
	/* Totals of every listener thread: the control plane keeps no per-listener split (docs/METRICS.md). */
	head(out, "mmproxy_connections_accepted_total", "counter", "TCP connections accepted from load balancers");
	sample(out, "mmproxy_connections_accepted_total", NULL, t[MMP_TCP_CNT_accepted]);
	head(out, "mmproxy_connections_refused_total", "counter", "TCP connections refused or closed before the upstream, by reason");
	sample(out, "mmproxy_connections_refused_total", "reason=\"source_not_allowed\"", t[MMP_TCP_CNT_refused_source]);
	sample(out, "mmproxy_connections_refused_total", "reason=\"bad_header\"", t[MMP_TCP_CNT_bad_header]);
	sample(out, "mmproxy_connections_refused_total", "reason=\"header_timeout\"", t[MMP_TCP_CNT_header_timeout]);
	sample(out, "mmproxy_connections_refused_total", "reason=\"upstream_failed\"", t[MMP_TCP_CNT_upstream_failed]);
	sample(out, "mmproxy_connections_refused_total", "reason=\"endpoint_not_allowed\"", t[MMP_TCP_CNT_refused_endpoint]);
	head(out, "mmproxy_connections_active", "gauge", "TCP connections open now");
	sample(out, "mmproxy_connections_active", NULL, t[MMP_TCP_CNT_active]);
	head(out, "mmproxy_handoffs_total", "counter", "flows offered to an in-kernel engine, by engine and outcome");
	sample(out, "mmproxy_handoffs_total", "engine=\"tc\",outcome=\"spliced\"", t[MMP_TCP_CNT_tc_flows]);
	sample(out, "mmproxy_handoffs_total", "engine=\"tc\",outcome=\"ineligible\"", t[MMP_TCP_CNT_tc_ineligible]);
	sample(out, "mmproxy_handoffs_total", "engine=\"tc\",outcome=\"aborted\"", t[MMP_TCP_CNT_tc_aborted]);
	sample(out, "mmproxy_handoffs_total", "engine=\"tc\",outcome=\"short\"", t[MMP_TCP_CNT_tc_short]);
	sample(out, "mmproxy_handoffs_total", "engine=\"sockmap\",outcome=\"spliced\"", t[MMP_TCP_CNT_sockmap_flows]);
	sample(out, "mmproxy_handoffs_total", "engine=\"sockmap\",outcome=\"fallback\"", t[MMP_TCP_CNT_sockmap_fallbacks]);
	head(out, "mmproxy_splice_pipe_fallbacks_total", "counter",
	     "spliced connections copied through userspace: no pipe could be had (per-user pipe limits, open files)");
	sample(out, "mmproxy_splice_pipe_fallbacks_total", NULL, t[MMP_TCP_CNT_pipe_fallbacks]);
}

static void kernel_series(FILE *out, const struct mmp_snapshot *s)
{
	if (s->has_tc_flows || s->has_sockmap_flows) {
		head(out, "mmproxy_kernel_flows", "gauge", "TCP flows an in-kernel engine holds now");
		if (s->has_tc_flows)
			sample(out, "mmproxy_kernel_flows", "engine=\"tc\"", s->tc_flows);
		if (s->has_sockmap_flows)
			sample(out, "mmproxy_kernel_flows", "engine=\"sockmap\"", s->sockmap_flows);
		/* The maps keep bytes per live flow only: a gauge over the flows open now. */
		head(out, "mmproxy_kernel_flow_bytes", "gauge", "payload bytes moved so far by the flows an in-kernel engine holds now");
		if (s->has_tc_flows) {
			sample(out, "mmproxy_kernel_flow_bytes", "engine=\"tc\",direction=\"up\"", s->tc_bytes[0]);
			sample(out, "mmproxy_kernel_flow_bytes", "engine=\"tc\",direction=\"down\"", s->tc_bytes[1]);
		}
		if (s->has_sockmap_flows) {
			sample(out, "mmproxy_kernel_flow_bytes", "engine=\"sockmap\",direction=\"up\"", s->sockmap_bytes[0]);
			sample(out, "mmproxy_kernel_flow_bytes", "engine=\"sockmap\",direction=\"down\"", s->sockmap_bytes[1]);
		}
	}
}

/* Running byte totals exist for sockmap (redirected, both ways in one) and UDP; tc and splice keep none. */
static void bytes_series(FILE *out, const struct mmp_snapshot *s)
{
	const char *n = "mmproxy_bytes_total";

	if (!s->has[MMP_FAM_SOCKMAP] && !s->has[MMP_FAM_UDP])
		return;
	head(out, n, "counter", "bytes moved, by engine and direction (where the engine counts them)");
	if (s->has[MMP_FAM_SOCKMAP])
		sample(out, n, "engine=\"sockmap\",direction=\"both\"", s->v[MMP_FAM_SOCKMAP][MMP_CNT_REDIRECTED_BYTES]);
	if (s->has[MMP_FAM_UDP]) {
		sample(out, n, "engine=\"udp\",direction=\"up\"", s->v[MMP_FAM_UDP][MMP_UDP_CNT_fwd_bytes]);
		sample(out, n, "engine=\"udp\",direction=\"down\"", s->v[MMP_FAM_UDP][MMP_UDP_CNT_sent_bytes]);
	}
}

static void udp_series(FILE *out, const struct mmp_snapshot *s)
{
	const struct mmp_family_desc *d = &mmp_families[MMP_FAM_UDP];
	const uint64_t *u = s->v[MMP_FAM_UDP];
	char labels[96];

	if (!s->has[MMP_FAM_UDP])
		return;
	head(out, "mmproxy_udp_flows", "gauge", "UDP flows open now, by path (kernel: the fast path moves them)");
	sample(out, "mmproxy_udp_flows", "path=\"all\"", u[MMP_UDP_CNT_flows_active]);
	sample(out, "mmproxy_udp_flows", "path=\"kernel\"", u[MMP_UDP_CNT_flows_fast]);
	head(out, "mmproxy_udp_datagrams_total", "counter", "UDP datagrams forwarded, by direction and path");
	sample(out, "mmproxy_udp_datagrams_total", "direction=\"up\",path=\"userspace\"", u[MMP_UDP_CNT_fwd_dgrams]);
	sample(out, "mmproxy_udp_datagrams_total", "direction=\"up\",path=\"kernel\"", u[MMP_UDP_CNT_fast_fwd_dgrams]);
	sample(out, "mmproxy_udp_datagrams_total", "direction=\"down\",path=\"userspace\"", u[MMP_UDP_CNT_sent_dgrams]);
	sample(out, "mmproxy_udp_datagrams_total", "direction=\"down\",path=\"kernel\"", u[MMP_UDP_CNT_fast_reply_dgrams]);
	head(out, "mmproxy_udp_dropped_total", "counter", "UDP datagrams dropped, by reason (the drop_* counters)");
	for (unsigned int i = 0; i < d->n; i++)
		if (!strncmp(d->c[i].name, "drop_", 5)) {
			snprintf(labels, sizeof(labels), "reason=\"%s\"", d->c[i].name + 5);
			sample(out, "mmproxy_udp_dropped_total", labels, u[i]);
		}
}

static void xdp_series(FILE *out, const struct mmp_snapshot *s)
{
	char labels[32];

	if (!s->n_xdp)
		return;
	head(out, "mmproxy_xdp_verdicts_total", "counter", "packets the XDP gate judged, by verdict (index into mmp_xdp_cnt)");
	for (unsigned int i = 0; i < s->n_xdp; i++) {
		snprintf(labels, sizeof(labels), "verdict=\"%u\"", i);
		sample(out, "mmproxy_xdp_verdicts_total", labels, s->xdp[i]);
	}
}

static void histogram(FILE *out, const struct mmp_hist_snapshot *h)
{
	const char *n = "mmproxy_handoff_duration_seconds";

	head(out, n, "histogram", "tc hand-off duration, from HOLD to the switch to SPLICE");
	for (int i = 0; i < MMP_HIST_NBOUNDS; i++)
		fprintf(out, "%s_bucket{le=\"%g\"} %llu\n", n, mmp_hist_bounds_us[i] / 1e6,
			(unsigned long long)h->cumulative[i]);
	fprintf(out, "%s_bucket{le=\"+Inf\"} %llu\n", n, (unsigned long long)h->cumulative[MMP_HIST_NBOUNDS]);
	fprintf(out, "%s_sum %.6f\n%s_count %llu\n", n, h->sum_us / 1e6, n, (unsigned long long)h->count);
}

void mmp_prom_write(FILE *out, const struct mmp_snapshot *s, const struct mmp_prom_extra *x)
{
	tcp_series(out, s);
	kernel_series(out, s);
	bytes_series(out, s);
	udp_series(out, s);
	xdp_series(out, s);
	if (s->has_allow) {
		head(out, "mmproxy_allowed_subnets", "gauge", "prefixes in the allowed-subnets maps, by family");
		sample(out, "mmproxy_allowed_subnets", "family=\"ipv4\"", s->allow4);
		sample(out, "mmproxy_allowed_subnets", "family=\"ipv6\"", s->allow6);
	}
	head(out, "mmproxy_reloads_total", "counter", "reloads of the allowed-subnets file (SIGHUP), by result");
	sample(out, "mmproxy_reloads_total", "result=\"ok\"", x->reloads_ok);
	sample(out, "mmproxy_reloads_total", "result=\"failed\"", x->reloads_failed);
	if (x->handoff)
		histogram(out, x->handoff);
	for (int f = 0; f < MMP_FAM_MAX; f++)
		family(out, s, f);
}
