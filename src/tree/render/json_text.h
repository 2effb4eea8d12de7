/* Strings into jansson from the capture's bytes (common/buf.h says how
 * names are written): json_string() refuses what is not UTF-8 and returns
 * NULL, and json_object_set_new() then drops the key without a word.  Every
 * string a JSON file takes from the capture goes through xpf_json_text. */
#ifndef XPF_JSON_TEXT_H
#define XPF_JSON_TEXT_H

#include <jansson.h>

#include "common/buf.h"

/* s as a JSON string (never NULL): each byte that is not UTF-8 becomes
 * U+FFFD; NULL gives "". */
static inline json_t *xpf_json_text(const char *s)
{
	json_t *j = json_string(s ? s : "");
	if (j)
		return j;
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_utf8(&b, s);
	j = json_stringn(b.data ? b.data : "", b.len);
	xpf_buf_release(&b);
	return j;
}

#endif
