/* Small text helpers shared by the rules (diag_rules_*.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diag_priv.h"
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
