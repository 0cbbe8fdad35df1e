// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "lib/log.h"

int mmp_verbosity = MMP_LOG_ERR;

void mmp_log(enum mmp_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if ((int)level > mmp_verbosity)
		return;
	/* Format first, then one write: lines from listener threads never interleave. */
	n = snprintf(line, sizeof(line), "mmproxy-bpf: ");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(line) - 1)
		n = sizeof(line) - 2;
	if (line[n - 1] != '\n')
		line[n++] = '\n';
	fwrite(line, 1, n, stderr);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	static char msg[65536]; /* verifier logs are long; libbpf prints them from one thread */
	char *line, *save;

	if (level == LIBBPF_DEBUG && mmp_verbosity < MMP_LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && mmp_verbosity < MMP_LOG_DEBUG)
		return 0;
	if (level == LIBBPF_WARN && mmp_verbosity < MMP_LOG_CONN)
		return 0;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		mmp_log(MMP_LOG_ERR, "%s", line); /* libbpf prefixes its own "libbpf: " */
	return 0;
}

void mmp_log_setup_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
