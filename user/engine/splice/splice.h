/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The splice engine: bytes move socket -> pipe -> socket with splice(2), one
 * pipe per direction, opened once a direction needs it; a direction's first
 * bytes are copied with recv/send (splice_copy.c). Runs everywhere; the
 * permanent fallback for the in-kernel engines, and the engine the tc
 * engine takes flows over from.
 */
#ifndef MMP_SPLICE_H
#define MMP_SPLICE_H

#include "engine/engine.h"

extern const struct mmp_engine_ops mmp_splice_ops;

#endif
