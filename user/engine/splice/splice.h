/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The splice engine: bytes move socket -> pipe -> socket with splice(2), one
 * pipe per direction, never copied through userspace. Runs everywhere; the
 * permanent fallback for the in-kernel engines.
 */
#ifndef MMP_SPLICE_H
#define MMP_SPLICE_H

#include <stdint.h>
#include "core/conn.h"

struct mmp_worker;

/* Take over a connected pair. May close c on failure. */
void mmp_splice_start(struct mmp_worker *w, struct mmp_conn *c);
void mmp_splice_event(struct mmp_worker *w, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events);
/* Free the engine's resources (pipes); the caller closes the sockets. */
void mmp_splice_release(struct mmp_conn *c);

#endif
