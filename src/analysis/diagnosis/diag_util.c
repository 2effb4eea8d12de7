/* Small text helpers shared by the rules (diag_rules_*.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "common/alloc.h"

/* "f32[8,128]{1,0}" -> "f32[8,128]" (the layout is noise in a sentence). */
void xpf_diag_put_shape(xpf_buf *b, const char *shape)
{
	const char *brace = shape[0] == '(' ? NULL : strchr(shape, '{');
	xpf_buf_add(b, shape, brace ? (size_t)(brace - shape) : strlen(shape));
}

/* tsl's HumanReadableNumBytes, as XLA's OOM messages print sizes (reference
 * §9): "<n>B", one decimal for KiB, two for MiB and above, no space. */
const char *xpf_diag_tsl_human(uint64_t v, char out[32])
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (v < 1024) {
		snprintf(out, 32, "%lluB", (unsigned long long)v);
		return out;
	}
	long double x = (long double)v / 1024.0L;
	int u = 0;
	while (x >= 1024.0L && u < 5) {
		x /= 1024.0L;
		u++;
	}
	snprintf(out, 32, u == 0 ? "%.1Lf%s" : "%.2Lf%s", x, units[u]);
	return out;
}

int xpf_diag_shape_dims(const char *shape, uint64_t dims[8])
{
	const char *p = shape ? strchr(shape, '[') : NULL;
	int n = 0;
	if (p == NULL || shape[0] == '(')
		return 0;
	p++;
	while (*p && *p != ']' && n < 8) {
		char *end;
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p)
			return 0;
		dims[n++] = v;
		p = end;
		if (*p == ',')
			p++;
	}
	return n;
}

bool xpf_diag_square_seq(const char *shape, uint64_t seq)
{
	uint64_t d[8];
	int n = xpf_diag_shape_dims(shape, d);
	if (n < 3 || d[n - 1] != d[n - 2])
		return false;
	return seq ? d[n - 1] == seq : d[n - 1] >= 128;
}

const char *xpf_diag_param_dtype(const xpf_plan *p)
{
	static const char *const floats[] = { "f32", "bf16", "f16", "f64" };
	uint64_t bytes[4] = { 0 };
	int best = -1;
	for (size_t i = 0; i < p->nparams; i++)
		for (int k = 0; k < 4; k++)
			if (strcmp(p->params[i].dtype, floats[k]) == 0)
				bytes[k] += p->params[i].bytes;
	for (int k = 0; k < 4; k++)
		if (bytes[k] && (best < 0 || bytes[k] > bytes[best]))
			best = k;
	return best < 0 ? "" : floats[best];
}
