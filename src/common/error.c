#include "error.h"

#include <stdio.h>
#include <string.h>

int xpf_vfail(xpf_error *err, int code, const char *fmt, va_list ap)
{
	if (err == NULL || err->code != XPF_OK)
		return code;
	err->code = code;
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
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

void xpf_error_clear(xpf_error *err)
{
	if (err) {
		err->code = XPF_OK;
		err->msg[0] = '\0';
	}
}

void xpf_error_prefix(xpf_error *err, const char *fmt, ...)
{
	char pre[512], old[sizeof err->msg];
	va_list ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof pre, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	size_t n = strlen(pre);
	if (n > sizeof err->msg - 3)
		n = sizeof err->msg - 3;
	memcpy(err->msg, pre, n);
	memcpy(err->msg + n, ": ", 2);
	size_t rest = sizeof err->msg - n - 3;
	size_t ol = strlen(old);
	if (ol > rest)
		ol = rest;
	memcpy(err->msg + n + 2, old, ol);
	err->msg[n + 2 + ol] = '\0';
}

const char *xpf_code_name(int code)
{
	switch (code) {
	case XPF_OK: return "ok";
	case XPF_EUSAGE: return "usage error";
	case XPF_EIO: return "cannot read";
	case XPF_EMALFORMED: return "malformed capture";
	case XPF_EUNSUPPORTED: return "not supported";
	case XPF_EMOUNT: return "mount failed";
	}
	return "error";
}
