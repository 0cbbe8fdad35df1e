// SPDX-License-Identifier: GPL-2.0
/*
 * Relay pipes' sizes (docs/DESIGN.md §3d, "Pipe sizes"). With --engine
 * splice a pipe's size sets how much one pass moves. But pipes are charged
 * to the user, and a pipe opened past fs.pipe-user-pages-soft gets 8 KiB, too
 * small to splice through: its flow copies at about twice the CPU. Every
 * relay pipe grown to 256 KiB, 128 pipes (64 flows) reached the default soft
 * limit, and every flow after them copied. So grown pipes share a budget,
 * half the soft limit, and the pipes that come once it is spent keep the
 * kernel's 64 KiB: 512 more of those fit before the soft limit.
 *
 * 1 MiB pipes cost less again, but the default budget holds only 32 of
 * them: on 50 two-way streams 32 pipes got 1 MiB and 68 got 64 KiB, and the
 * proxy spent 0.54 CPU seconds per GB against 0.39 with 256 KiB for all
 * (docs/benchmarks.md). So pipes are 1 MiB only where the budget holds 128
 * of them, where the operator raised the soft limit fourfold or lifted it.
 */
#include <limits.h>
#include <pthread.h>
#include <unistd.h>
#include "engine/splice/splice_pipe_budget.h"
#include "lib/sysctl.h"

/* fs/pipe.c: pipe_user_pages_soft's default (PIPE_DEF_BUFFERS * INR_OPEN_CUR pages). */
#define KERNEL_SOFT_PAGES 16384

long mmp_pipe_page_size(void)
{
	long sz = sysconf(_SC_PAGESIZE);

	return sz > 0 ? sz : 4096;
}

void mmp_pipe_budget_init(struct mmp_pipe_budget *b, long soft_pages, long hard_pages, long max_pages)
{
	if (soft_pages < 0)
		soft_pages = KERNEL_SOFT_PAGES;
	if (soft_pages > 0)
		b->limit = soft_pages / 2;
	else if (hard_pages > 0)
		b->limit = hard_pages / 2;
	else
		b->limit = LONG_MAX;
	if (max_pages <= 0)
		max_pages = LONG_MAX;
	b->pipe_pages = MMP_SPLICE_PIPE_BYTES_LARGE / mmp_pipe_page_size();
	if (b->pipe_pages > max_pages || b->limit / MMP_SPLICE_PIPES_AT_LEAST < b->pipe_pages)
		b->pipe_pages = MMP_SPLICE_PIPE_BYTES / mmp_pipe_page_size();
	if (b->pipe_pages > max_pages)
		b->pipe_pages = 0;
	atomic_init(&b->held, 0);
}

long mmp_pipe_budget_take(struct mmp_pipe_budget *b)
{
	long pages = b->pipe_pages;
	long held = atomic_load(&b->held);

	/* Another thread may take pages between the load and the exchange: retry on what it left. */
	while (pages && held <= b->limit - pages) {
		if (atomic_compare_exchange_weak(&b->held, &held, held + pages))
			return pages;
	}
	return 0;
}

void mmp_pipe_budget_give(struct mmp_pipe_budget *b, long pages)
{
	if (pages > 0)
		atomic_fetch_sub(&b->held, pages);
}

static struct mmp_pipe_budget process_budget;
static pthread_once_t process_budget_once = PTHREAD_ONCE_INIT;

static void process_budget_init(void)
{
	long max_bytes = mmp_sysctl_read("/proc/sys/fs/pipe-max-size");

	mmp_pipe_budget_init(&process_budget, mmp_sysctl_read("/proc/sys/fs/pipe-user-pages-soft"),
			     mmp_sysctl_read("/proc/sys/fs/pipe-user-pages-hard"),
			     max_bytes > 0 ? max_bytes / mmp_pipe_page_size() : -1);
}

struct mmp_pipe_budget *mmp_splice_pipe_budget(void)
{
	pthread_once(&process_budget_once, process_budget_init);
	return &process_budget;
}
