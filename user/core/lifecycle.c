// SPDX-License-Identifier: GPL-2.0
/* A connection's life on its loop: born in CONN_HEADER, closed into the graveyard. */
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>
#include "core/clock.h"
#include "core/conn.h"
#include "core/counters.h"
#include "core/lifecycle.h"
#include "core/loop.h"
#include "lib/config.h"

struct mmp_conn *mmp_conn_new(struct mmp_loop *loop, int fd, const struct sockaddr_storage *peer)
{
	struct mmp_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->client = (struct mmp_endpoint){ .h.on_event = NULL, .fd = fd, .conn = c };
	c->upstream = (struct mmp_endpoint){ .fd = -1, .conn = c };
	c->lb_addr = *peer;
	c->state = CONN_HEADER;
	c->accepted_ms = mmp_now_ms();
	c->deadline_ms = c->accepted_ms + loop->cfg->header_timeout_ms;
	mmp_conn_list_push(&loop->header_wait, c);
	mmp_count(loop->counters, MMP_TCP_CNT_active, 1);
	return c;
}

static void close_endpoint(struct mmp_endpoint *ep, bool reset)
{
	if (ep->fd < 0)
		return;
	if (reset) {
		/* SO_LINGER {1, 0}: close() sends RST instead of FIN. */
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(ep->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(ep->fd); /* also removes it from epoll */
	ep->fd = -1;
}

void mmp_conn_close(struct mmp_loop *loop, struct mmp_conn *c, unsigned int how)
{
	mmp_conn_list_remove(mmp_loop_list_of(loop, c), c);
	mmp_loop_poll_remove(loop, c);
	/* The engines release their state while the sockets are still open (sockmap removes its entries). */
	if (loop->on_conn_release)
		loop->on_conn_release(loop, c);
	close_endpoint(&c->client, how & MMP_CLOSE_RESET_CLIENT);
	close_endpoint(&c->upstream, how & MMP_CLOSE_RESET_UPSTREAM);
	mmp_count(loop->counters, MMP_TCP_CNT_active, -1);
	{
		enum mmp_conn_state old = c->state;

		c->state = CONN_DEAD;
		if (loop->on_conn_state)
			loop->on_conn_state(loop, c, old);
	}
	c->next = loop->graveyard;
	loop->graveyard = c;
}

void mmp_conn_close_all(struct mmp_loop *loop)
{
	struct mmp_conn_list *lists[] = { &loop->header_wait, &loop->connect_wait, &loop->active };

	for (int i = 0; i < 3; i++)
		while (lists[i]->head)
			mmp_conn_close(loop, lists[i]->head, MMP_CLOSE_FIN);
}
