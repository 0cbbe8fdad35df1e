/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The data-path engines behind one interface, in the manner of HAProxy's
 * xprt_ops: a connection holds a pointer to its engine and the engine's
 * per-connection context (c->engine, c->ctx), and the loop and handshake
 * reach the engine only through these operations. docs/DESIGN.md §3 says
 * when each one is called.
 *
 * A connection has one engine that moves its bytes (splice or sockmap), and
 * possibly a second one waiting to take it over (tc, which takes flows from
 * splice once they are quiet): c->takeover, c->takeover_ctx.
 */
#ifndef MMP_ENGINE_H
#define MMP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h> /* ssize_t */
#include "core/conn.h"

struct mmp_config;
struct mmp_loop;

/* The engine strips the PROXY header itself (in the kernel): the handshake leaves it queued. */
#define MMP_ENGINE_F_STRIPS_HEADER (1u << 0)
/* The engine takes flows over from another engine later, instead of starting them. */
#define MMP_ENGINE_F_TAKES_OVER (1u << 1)
/*
 * What the engine loads into the kernel, for the privileges check
 * (lib/privileges.h): TC programs on the interfaces, or programs on
 * sockets (a sockmap verdict).
 */
#define MMP_ENGINE_F_TC_PROGRAMS (1u << 2)
#define MMP_ENGINE_F_SOCKET_PROGRAMS (1u << 3)

/* What an engine that others take flows from still holds of a connection. */
struct mmp_drain {
	size_t buffered[2]; /* bytes read, not yet written: [0] client -> upstream, [1] upstream -> client */
	bool fin_seen; /* either side sent its FIN */
};

/* What the upstream socket needs, decided before it is opened. */
struct mmp_preconnect {
	int mss; /* TCP_MAXSEG for the upstream socket; 0: leave it */
	/* An unspoofed connection's source the engine chose (tc: a port no spliced flow holds). */
	bool have_src;
	struct sockaddr_storage src;
};

struct mmp_engine;

struct mmp_engine_ops {
	const char *name;
	unsigned int flags; /* MMP_ENGINE_F_* */
	/* Per process: load programs and maps. 0 with *proc set, or a negative errno after logging. */
	int (*open)(const struct mmp_config *cfg, void **proc);
	/* keep: leave the kernel's state for a successor (flows that still run there). */
	void (*close)(void *proc, bool keep);
	/* Per loop (optional): the engine's state for one listener thread. */
	int (*worker_open)(struct mmp_engine *e, struct mmp_loop *loop);
	void (*worker_close)(struct mmp_engine *e, struct mmp_loop *loop);
	/* About once a second, on one loop (optional). */
	void (*tick)(struct mmp_engine *e);
	/*
	 * Before the upstream socket of c is opened (optional): claim the tuple
	 * and choose the socket's options. A negative errno refuses the connection.
	 */
	int (*pre_connect)(struct mmp_engine *e, struct mmp_conn *c, struct mmp_preconnect *pc);
	/*
	 * Take over a connected pair. 0, or a negative errno with nothing of the
	 * connection consumed or changed (the next engine is tried). c may be
	 * closed when it returns 0.
	 */
	int (*start)(struct mmp_loop *loop, struct mmp_conn *c);
	/* An epoll event on one of c's sockets. */
	void (*event)(struct mmp_loop *loop, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events);
	/* c's turn in the poll list (optional). */
	void (*poll)(struct mmp_loop *loop, struct mmp_conn *c);
	/* Free the engine's state of c; the sockets are still open and closed afterwards. */
	void (*release)(struct mmp_loop *loop, struct mmp_conn *c);
	/* For engines that others take over from (optional). */
	void (*drain_state)(const struct mmp_conn *c, struct mmp_drain *d);
	/*
	 * For engines that others take over from (optional): move up to len of
	 * the bytes direction dir buffers (as in struct mmp_drain) into buf, in
	 * order. Returns how many, or a negative errno.
	 */
	ssize_t (*take_buffered)(struct mmp_conn *c, int dir, void *buf, size_t len);
	/* For engines that take flows over (optional): c ended in its first engine's first step, before its turn. */
	void (*ended_first)(struct mmp_loop *loop, struct mmp_conn *c);
};

/* One engine as one loop sees it. */
struct mmp_engine {
	const struct mmp_engine_ops *ops;
	void *proc; /* from ops->open, shared by every loop */
	void *worker; /* from ops->worker_open, this loop's own */
};

/* The engines a run uses, chosen by --engine (engine.c). */
struct mmp_engines {
	struct mmp_engine first; /* starts every connection */
	struct mmp_engine fallback; /* when first refuses a pair (ops NULL: none) */
	struct mmp_engine takeover; /* takes flows over later (ops NULL: none) */
};

/*
 * Choose and open the engines for cfg->engine. auto: splice, with tc taking
 * over eligible flows when the kernel allows it. Returns 0 or a negative
 * errno after logging; an engine asked for by name that the kernel refuses
 * is an error, not a downgrade.
 */
int mmp_engines_open(const struct mmp_config *cfg, struct mmp_engines *out);
void mmp_engines_close(struct mmp_engines *e, bool keep);
/* "tc (splice for ineligible flows)", for the start-up line. */
const char *mmp_engines_describe(const struct mmp_engines *e);

/* Per loop: copy the process's engines into per-loop ones and open their loop state. */
int mmp_engines_worker_open(struct mmp_engines *mine, const struct mmp_engines *proc, struct mmp_loop *loop);
void mmp_engines_worker_close(struct mmp_engines *mine, struct mmp_loop *loop);

/* The handshake leaves the header queued for the first engine. */
bool mmp_engines_strip_header(const struct mmp_engines *e);
int mmp_engines_pre_connect(struct mmp_engines *e, struct mmp_conn *c, struct mmp_preconnect *pc);
/* Hand a connected pair (CONN_SPLICING) to the engines: first, else fallback; then the takeover. */
void mmp_engines_start(struct mmp_engines *e, struct mmp_loop *loop, struct mmp_conn *c);
void mmp_engines_tick(struct mmp_engines *e);

/* The loop's hooks (core/loop.h): dispatch to c->engine and c->takeover. */
void mmp_engine_event(struct mmp_loop *loop, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events);
void mmp_engine_poll(struct mmp_loop *loop, struct mmp_conn *c);
void mmp_engine_release(struct mmp_loop *loop, struct mmp_conn *c);
/* For a takeover engine: what c's engine still holds. */
void mmp_engine_drain_state(const struct mmp_conn *c, struct mmp_drain *d);
/* For a takeover engine: take what c's engine buffers of one direction (-EOPNOTSUPP: it cannot say). */
ssize_t mmp_engine_take_buffered(struct mmp_conn *c, int dir, void *buf, size_t len);

#endif
