// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/percpu.h"

int mmp_percpu_sum(int fd, uint32_t idx, uint64_t *sum)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	uint64_t *vals;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	*sum = 0;
	if (bpf_map_lookup_elem(fd, &idx, vals))
		err = -errno;
	for (int c = 0; !err && c < ncpu; c++)
		*sum += vals[c];
	free(vals);
	return err;
}
