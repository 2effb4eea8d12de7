/* Error codes and messages shared by every layer.
 *
 * A function that can fail takes an `xpf_error *` last and returns 0 on
 * success or one of the XPF_E* codes below; the message says what failed and
 * where, lower-case, without the program name (the caller prefixes it).  The
 * codes double as the command line's exit status (README "Exit status"). */
#ifndef XPF_ERROR_H
#define XPF_ERROR_H

#include <stdarg.h>

enum xpf_code {
	XPF_OK = 0,
	XPF_EUSAGE = 1,       /* usage error */
	XPF_EIO = 2,          /* the capture cannot be read (I/O, permissions) */
	XPF_EMALFORMED = 3,   /* not a capture, or malformed */
	XPF_EUNSUPPORTED = 4, /* a capture kind that is not supported */
	XPF_EMOUNT = 5,       /* the mount failed */
	XPF_EOUTPUT = 6,      /* the output could not be written (--cat, --export, --check) */
};

typedef struct xpf_error {
	int code;
	char msg[1024];
} xpf_error;

/* Set err (may be NULL) and return code.  Keeps the first error: a second
 * call on an error already set is ignored, so the innermost cause wins. */
int xpf_fail(xpf_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int xpf_vfail(xpf_error *err, int code, const char *fmt, va_list ap);

#endif
