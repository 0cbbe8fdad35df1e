// SPDX-License-Identifier: GPL-2.0
/* The tc engine's flow table: tuples, claims on a client ip:port, and garbage collection. */
#include <netinet/in.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core/clock.h"
#include "core/conn.h"
#include "core/counters.h"
#include "core/loop.h"
#include "engine/tc/tc_internal.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "mmp_tc.h"
#include "tc.skel.h"

int mmp_tc_addr_of(int fd, bool peer, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);
	int ret = peer ? getpeername(fd, (struct sockaddr *)ss, &len) : getsockname(fd, (struct sockaddr *)ss, &len);

	if (ret)
		return -errno;
	mmp_unmap_v4(ss); /* the wire carries IPv4 for ::ffff:a.b.c.d */
	return 0;
}

void mmp_tc_make_tuple(struct mmp_tc_tuple *t, const struct sockaddr_storage *src, const struct sockaddr_storage *dst)
{
	memset(t, 0, sizeof(*t));
	if (src->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)src, *d = (const void *)dst;

		t->family = 4;
		t->sport = s->sin_port;
		t->dport = d->sin_port;
		memcpy(t->saddr, &s->sin_addr, 4);
		memcpy(t->daddr, &d->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *s = (const void *)src, *d = (const void *)dst;

		t->family = 6;
		t->sport = s->sin6_port;
		t->dport = d->sin6_port;
		memcpy(t->saddr, &s->sin6_addr, 16);
		memcpy(t->daddr, &d->sin6_addr, 16);
	}
}

void mmp_tc_reverse_tuple(struct mmp_tc_tuple *r, const struct mmp_tc_tuple *t)
{
	*r = *t;
	r->sport = t->dport;
	r->dport = t->sport;
	memcpy(r->saddr, t->daddr, 16);
	memcpy(r->daddr, t->saddr, 16);
}

/* The four 4-tuples of a flow: [role] as in enum mmp_tc_role. */
void mmp_tc_tuples_of_flow(const struct mmp_tc_flow *flow, struct flow_tuples *ft)
{
	mmp_tc_reverse_tuple(&ft->t[MMP_TC_ROLE_UP], &flow->down.out);
	mmp_tc_reverse_tuple(&ft->t[MMP_TC_ROLE_DOWN], &flow->up.out);
	ft->t[MMP_TC_ROLE_HOLD_CONN1] = flow->down.out;
	ft->t[MMP_TC_ROLE_HOLD_CONN2] = flow->up.out;
}

int mmp_tc_flow_tuples(struct mmp_conn *c, struct flow_tuples *ft)
{
	struct sockaddr_storage l, p, cl, u;
	int err;

	err = mmp_tc_addr_of(c->client.fd, true, &l);
	if (!err)
		err = mmp_tc_addr_of(c->client.fd, false, &p);
	if (!err)
		err = mmp_tc_addr_of(c->upstream.fd, false, &cl);
	if (!err)
		err = mmp_tc_addr_of(c->upstream.fd, true, &u);
	if (err)
		return err;
	if (l.ss_family != cl.ss_family)
		return -EAFNOSUPPORT;
	mmp_tc_make_tuple(&ft->t[MMP_TC_ROLE_UP], &l, &p);
	mmp_tc_make_tuple(&ft->t[MMP_TC_ROLE_DOWN], &u, &cl);
	mmp_tc_make_tuple(&ft->t[MMP_TC_ROLE_HOLD_CONN1], &p, &l);
	mmp_tc_make_tuple(&ft->t[MMP_TC_ROLE_HOLD_CONN2], &cl, &u);
	return 0;
}

void mmp_tc_delete_flow(struct mmp_tc *tc, uint64_t flow, const struct flow_tuples *ft)
{
	for (int i = 0; i < 4; i++) {
		struct mmp_tc_tuple_val tv;

		/* A newer flow may already own this tuple (port reuse after RST): leave it. */
		if (bpf_map_lookup_elem(tc->tuples_fd, &ft->t[i], &tv) == 0 && tv.flow == flow)
			bpf_map_delete_elem(tc->tuples_fd, &ft->t[i]);
	}
	bpf_map_delete_elem(tc->flows_fd, &flow);
	/* Gone with its flow: a carry that never finished (the peers reset, an instance died in it). */
	bpf_map_delete_elem(tc->carry_fd, &flow);
}

bool mmp_tc_forget_stale_tuple(struct mmp_tc *tc, const struct mmp_tc_tuple *t)
{
	struct mmp_tc_tuple_val tv;
	struct mmp_tc_flow flow;

	if (bpf_map_lookup_elem(tc->tuples_fd, t, &tv))
		return true; /* gone meanwhile */
	if (bpf_map_lookup_elem(tc->flows_fd, &tv.flow, &flow) == 0 &&
	    !(flow.mode == MMP_TC_MODE_SPLICE && mmp_tc_flow_ended(&flow.st)))
		return false;
	bpf_map_delete_elem(tc->tuples_fd, t);
	return true;
}

void mmp_tc_mark_port(struct mmp_tc *tc, const struct mmp_tc_tuple *t, uint32_t role)
{
	uint16_t port = mmp_tc_service_port(t, role);

	/* Loops share the engine; the bpf() insert that follows orders it before the tuple. */
	__atomic_fetch_or(&tc->skel->bss->mmp_tc_ports[port / 64], 1ULL << (port % 64), __ATOMIC_RELAXED);
}

int mmp_tc_mark_adopted_ports(struct mmp_tc *tc)
{
	struct mmp_tc_tuple key, *prev = NULL;
	struct mmp_tc_tuple_val tv;
	int n = 0;

	/* A tuple deleted mid-walk is skipped: its flow needs no mark. */
	while (bpf_map_get_next_key(tc->tuples_fd, prev, &key) == 0) {
		if (bpf_map_lookup_elem(tc->tuples_fd, &key, &tv) == 0) {
			mmp_tc_mark_port(tc, &key, tv.role);
			n++;
		}
		prev = &key;
	}
	return n;
}

void mmp_tc_tuples_writing(struct mmp_tc *tc)
{
	atomic_fetch_add(&tc->tuple_writes, 1);
}

void mmp_tc_tuples_written(struct mmp_tc *tc)
{
	atomic_fetch_add(&tc->tuple_writes_done, 1);
}

/*
 * done is read before started: equal, every insert that had started by then
 * has finished, so an empty map after that holds none of their tuples; an
 * insert that starts later raises tuple_writes above what is stored.
 */
void mmp_tc_note_empty(struct mmp_tc *tc)
{
	uint64_t done = atomic_load(&tc->tuple_writes_done);
	uint64_t started = atomic_load(&tc->tuple_writes);
	struct mmp_tc_tuple key;

	if (started != done)
		return; /* a hand-off is inserting */
	if (bpf_map_get_next_key(tc->tuples_fd, NULL, &key) == 0 || errno != ENOENT)
		return; /* not empty (or not known to be) */
	atomic_store(&tc->empty_at, started);
}

int mmp_tc_claim_client(struct mmp_tc *tc, const struct sockaddr *client, const struct sockaddr *upstream)
{
	struct sockaddr_storage c, u;
	struct mmp_tc_tuple down;
	struct mmp_tc_tuple_val tv;
	struct mmp_tc_flow flow;
	struct flow_tuples ft;

	/* No tuple inserted since the map was seen empty: no spliced flow holds this one. */
	if (atomic_load(&tc->tuple_writes) == atomic_load(&tc->empty_at))
		return 0;
	memcpy(&c, client, mmp_sockaddr_len(client));
	memcpy(&u, upstream, mmp_sockaddr_len(upstream));
	mmp_unmap_v4(&c);
	mmp_unmap_v4(&u);
	if (c.ss_family != u.ss_family)
		return 0;
	mmp_tc_make_tuple(&down, &u, &c);
	if (bpf_map_lookup_elem(tc->tuples_fd, &down, &tv) || tv.role != MMP_TC_ROLE_DOWN)
		return 0;
	if (bpf_map_lookup_elem(tc->flows_fd, &tv.flow, &flow))
		return 0;
	/* A live spliced flow holds this ip:port, as a live socket would. */
	if (!mmp_tc_flow_ended(&flow.st))
		return -EADDRINUSE;
	mmp_tc_tuples_of_flow(&flow, &ft);
	mmp_tc_delete_flow(tc, tv.flow, &ft);
	return 0;
}

/*
 * A hand-off's entries, found by walking the tuples (its flow entry may not
 * name them all: the instance died before the switch wrote them).
 */
static void delete_orphan(struct mmp_tc *tc, uint64_t flow)
{
	struct mmp_tc_tuple key, next;
	bool have = bpf_map_get_next_key(tc->tuples_fd, NULL, &next) == 0;

	while (have) {
		struct mmp_tc_tuple_val tv;

		key = next;
		have = bpf_map_get_next_key(tc->tuples_fd, &key, &next) == 0;
		if (bpf_map_lookup_elem(tc->tuples_fd, &key, &tv) == 0 && tv.flow == flow)
			bpf_map_delete_elem(tc->tuples_fd, &key);
	}
	bpf_map_delete_elem(tc->flows_fd, &flow);
}

/*
 * One flow entry's verdict in a sweep: 1 when it was removed. `now` is
 * taken before the walk (see the regression below).
 */
static int collect_one(struct mmp_tc *tc, uint64_t key, const struct mmp_tc_flow *flow, uint64_t now,
		       uint64_t linger_ns)
{
	const struct mmp_tc_stats *st = &flow->st;
	struct flow_tuples ft;
	uint64_t idle;
	bool done;

	/*
	 * A hand-off in progress belongs to its worker, unless it was
	 * left by a previous instance (started before this one opened;
	 * the pin directory's lock rules out a live one) or is far older
	 * than any hand-off takes: its claim on the tuple is released.
	 */
	if (flow->mode != MMP_TC_MODE_SPLICE) {
		if (st->last_seen_ns < tc->open_ns ||
		    (st->last_seen_ns < now && now - st->last_seen_ns > ORPHAN_NS)) {
			delete_orphan(tc, key);
			return 1;
		}
		return 0;
	}
	/*
	 * Regression: `now` is taken before the walk, and the programs keep
	 * stamping last_seen meanwhile; an unsigned now - last_seen then
	 * wrapped and removed busy flows (every one of them reset).
	 */
	idle = st->last_seen_ns && st->last_seen_ns < now ? now - st->last_seen_ns : 0;
	done = mmp_tc_flow_ended(st) && st->last_seen_ns && idle >= linger_ns;
	/* Idle: no packet at all (keepalives count) for the idle timeout. */
	if (!done && tc->idle_ns && idle > tc->idle_ns)
		done = true;
	if (!done)
		return 0;
	mmp_tc_tuples_of_flow(flow, &ft);
	mmp_tc_delete_flow(tc, key, &ft);
	return 1;
}

/* The sweep one entry at a time: two bpf() calls per flow. */
static int collect_walk(struct mmp_tc *tc, uint64_t now, uint64_t linger_ns)
{
	uint64_t key, next;
	bool have = bpf_map_get_next_key(tc->flows_fd, NULL, &next) == 0;
	struct mmp_tc_flow flow;
	int removed = 0;

	while (have) {
		key = next;
		have = bpf_map_get_next_key(tc->flows_fd, &key, &next) == 0;
		if (bpf_map_lookup_elem(tc->flows_fd, &key, &flow) == 0)
			removed += collect_one(tc, key, &flow, now, linger_ns);
	}
	return removed;
}

/*
 * The sweep runs once a second on a loop that also accepts connections.
 * Walked one entry at a time it cost two bpf() calls per flow: with
 * 100,000 flows held, 200,000 calls a second, that loop stalled for tens of
 * milliseconds each time, and the proxy spent 0.030 of a CPU at 30,000
 * idle flows (bench/scale.sh). BPF_MAP_LOOKUP_BATCH reads COLLECT_BATCH
 * entries a call. Deleting entries already read does not disturb it: the
 * batch cursor is the next hash bucket. A kernel or map without batch
 * lookups (EINVAL, ENOTSUPP), or a bucket longer than the batch (ENOSPC),
 * falls back to the walk, which sees every entry again: collect_one is
 * idempotent.
 */
#define COLLECT_BATCH 256

/*
 * Reads from sw's cursor until the end of the map, or past max_entries
 * (0: no bound); sets *done at the end. Returns how many were removed.
 */
static int sweep(struct mmp_tc *tc, struct mmp_tc_sweep *sw, uint64_t linger_ns, uint32_t max_entries,
		 bool *done)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint64_t now = mmp_now_ns(), *keys;
	struct mmp_tc_flow *flows;
	uint32_t read = 0;
	int removed = 0, err;
	__u32 n;

	*done = true;
	keys = malloc(COLLECT_BATCH * sizeof(*keys));
	flows = malloc(COLLECT_BATCH * sizeof(*flows));
	if (!keys || !flows) {
		removed = collect_walk(tc, now, linger_ns);
		goto out;
	}
	for (;;) {
		n = COLLECT_BATCH;
		err = bpf_map_lookup_batch(tc->flows_fd, sw->started ? &sw->token : NULL, &sw->token, keys, flows,
					   &n, &opts);
		if (err && errno != ENOENT) {
			removed += collect_walk(tc, now, linger_ns);
			break;
		}
		for (__u32 i = 0; i < n; i++)
			removed += collect_one(tc, keys[i], &flows[i], now, linger_ns);
		if (err) /* ENOENT: the last entries came with it */
			break;
		sw->started = true;
		read += n;
		if (max_entries && read >= max_entries) {
			*done = false;
			break;
		}
	}
out:
	if (*done)
		sw->started = false;
	free(keys);
	free(flows);
	return removed;
}

int mmp_tc_collect(struct mmp_tc *tc, uint64_t linger_ns)
{
	struct mmp_tc_sweep sw = { 0 };
	bool done;

	return sweep(tc, &sw, linger_ns, 0, &done);
}

/*
 * Even batched, a whole sweep of 100,000 flows took the proxy 0.032 of a
 * CPU, in one stall a second of the loop that runs it. The tick reads at
 * most max_entries and goes on from there at the next: a finished flow
 * lingers up to flows / max_entries seconds more (7 s at 100,000 and the
 * default 16384), which only delays freeing its entries (a new flow that
 * needs its ip:port takes it at once, mmp_tc_claim_client).
 */
int mmp_tc_collect_step(struct mmp_tc *tc, uint64_t linger_ns, uint32_t max_entries)
{
	bool done;

	return sweep(tc, &tc->sweep, linger_ns, max_entries, &done);
}

#define SOURCE_TRIES 8

int mmp_tc_unspoofed_source(struct mmp_tc *tc, const struct sockaddr *upstream, struct sockaddr_storage *src)
{
	int held[SOURCE_TRIES], n = 0, fd = -1, err;
	socklen_t len = sizeof(*src);

	/* The source address the kernel would choose: a connected UDP socket sends nothing. */
	fd = socket(upstream->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = connect(fd, upstream, mmp_sockaddr_len(upstream)) || getsockname(fd, (struct sockaddr *)src, &len) ?
		      -errno : 0;
	close(fd);
	if (err)
		return err;
	/*
	 * A port the kernel binds now is free, but may be a spliced flow's,
	 * whose sockets are gone: keep such a port bound while looking further,
	 * so that the kernel offers another one.
	 */
	err = -EADDRINUSE;
	while (n < SOURCE_TRIES) {
		fd = socket(upstream->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = -errno;
			break;
		}
		if (src->ss_family == AF_INET)
			((struct sockaddr_in *)src)->sin_port = 0;
		else
			((struct sockaddr_in6 *)src)->sin6_port = 0;
		len = sizeof(*src);
		if (bind(fd, (struct sockaddr *)src, mmp_sockaddr_len((struct sockaddr *)src)) ||
		    getsockname(fd, (struct sockaddr *)src, &len)) {
			err = -errno;
			close(fd);
			break;
		}
		err = mmp_tc_claim_client(tc, (struct sockaddr *)src, upstream);
		held[n++] = fd;
		if (err != -EADDRINUSE)
			break;
	}
	while (n > 0)
		close(held[--n]);
	return err;
}
