/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How large the splice engine's relay pipes may grow (docs/DESIGN.md §3d,
 * "Pipe sizes"). Private to engine/splice/.
 */
#ifndef MMP_SPLICE_PIPE_BUDGET_H
#define MMP_SPLICE_PIPE_BUDGET_H

#include <stdatomic.h>

/*
 * What a relay pipe grows to while the budget lasts (the kernel's default is
 * 64 KiB): 1 MiB where the budget holds MMP_SPLICE_PIPES_AT_LEAST of them,
 * else 256 KiB.
 */
#define MMP_SPLICE_PIPE_BYTES_LARGE (1024 * 1024)
#define MMP_SPLICE_PIPE_BYTES (256 * 1024)
#define MMP_SPLICE_PIPES_AT_LEAST 128

/*
 * The pages that grown pipes may hold together. Every pipe of the user
 * counts against fs.pipe-user-pages-soft, and past it a new pipe gets 8 KiB
 * and its flow copies through userspace; so grown pipes get half of it, and
 * the other half is left to default-sized pipes and to the user's other
 * processes.
 */
struct mmp_pipe_budget {
	atomic_long held; /* pages of the grown pipes now open */
	long limit; /* pages they may hold together */
	long pipe_pages; /* what one pipe takes: MMP_SPLICE_PIPE_BYTES(_LARGE) in pages, 0 when no pipe may grow */
};

/*
 * Sets b up from the sysctls' values (-1: unreadable): limit is half of
 * soft_pages, or of hard_pages where soft_pages is 0 (no soft limit); both 0
 * is no limit. An unreadable soft limit counts as the kernel's default. The
 * pipes' size follows from the limit and from max_pages (fs.pipe-max-size in
 * pages: an unprivileged pipe grows no further).
 */
void mmp_pipe_budget_init(struct mmp_pipe_budget *b, long soft_pages, long hard_pages, long max_pages);

/*
 * Takes from b the pages of a new relay pipe (b->pipe_pages), or 0 when they
 * do not fit what is left (the pipe keeps the kernel's default). Safe from
 * any thread.
 */
long mmp_pipe_budget_take(struct mmp_pipe_budget *b);

/* Gives back what mmp_pipe_budget_take took, once the pipe is closed or could not grow. */
void mmp_pipe_budget_give(struct mmp_pipe_budget *b, long pages);

/* The process's budget, set up from /proc/sys/fs on first use. */
struct mmp_pipe_budget *mmp_splice_pipe_budget(void);

/* The system's page size: the unit of the pipe limits. */
long mmp_pipe_page_size(void);

#endif
