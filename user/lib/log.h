/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Logging in the style of xdp-tools: pr_err always, pr_warn and pr_conn at
 * -v 1 (per-connection errors), pr_debug at -v 2 (every state change).
 * Every message names the operation, the cause and, where there is one, the fix.
 */
#ifndef MMP_LOG_H
#define MMP_LOG_H

enum mmp_log_level {
	MMP_LOG_ERR = 0,
	MMP_LOG_CONN = 1,
	MMP_LOG_DEBUG = 2,
};

extern int mmp_verbosity;

void mmp_log(enum mmp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Route libbpf's own messages through mmp_log (warnings at -v 1, debug at -v 2). */
void mmp_log_setup_libbpf(void);

/*
 * The level is checked before the arguments are evaluated: per-connection
 * lines format addresses, which must cost nothing on the accept path at -v 0.
 */
#define mmp_log_at(level, ...)                                 \
	do {                                                   \
		if ((int)(level) <= mmp_verbosity)             \
			mmp_log(level, __VA_ARGS__);           \
	} while (0)

#define pr_err(...) mmp_log_at(MMP_LOG_ERR, __VA_ARGS__)
#define pr_warn(...) mmp_log_at(MMP_LOG_ERR, __VA_ARGS__)
#define pr_conn(...) mmp_log_at(MMP_LOG_CONN, __VA_ARGS__)
#define pr_info(...) mmp_log_at(MMP_LOG_CONN, __VA_ARGS__)
#define pr_debug(...) mmp_log_at(MMP_LOG_DEBUG, __VA_ARGS__)

#endif
