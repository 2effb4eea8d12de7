#include "error.h"

#include <stdio.h>
#include <string.h>

/* A message is one line on stderr and in capture/errors.txt, and names
 * from the capture reach it ("module 'jit\n...'"): its control characters
 * become \n, \t, \r or \xHH (SPEC §3), cut to the message's room. */
static void escape_controls(char *msg, size_t room)
{
	char in[sizeof((xpf_error *)0)->msg];
	snprintf(in, sizeof in, "%s", msg);
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)in; *p && o + 1 < room; p++) {
		char esc[5] = { (char)*p, 0 };
		if (*p == '\n' || *p == '\t' || *p == '\r')
			snprintf(esc, sizeof esc, "\\%c",
				 *p == '\n' ? 'n' :
				 *p == '\t' ? 't' :
					      'r');
		else if (*p < 0x20 || *p == 0x7f)
			snprintf(esc, sizeof esc, "\\x%02x", *p);
		size_t n = strlen(esc);
		if (o + n + 1 > room)
			break;
		memcpy(msg + o, esc, n);
		o += n;
	}
	msg[o] = '\0';
}

int xpf_vfail(xpf_error *err, int code, const char *fmt, va_list ap)
{
	if (err == NULL || err->code != XPF_OK)
		return code;
	err->code = code;
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	escape_controls(err->msg, sizeof err->msg);
	return code;
}

int xpf_fail(xpf_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	xpf_vfail(err, code, fmt, ap);
	va_end(ap);
	return code;
}
