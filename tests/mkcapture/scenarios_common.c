#include "scenarios.h"

#include <stdio.h>
#include <string.h>

hb_meta mk_meta(const char *op_type, const char *op_name, const char *file, const char *fn, int line)
{
	hb_meta x = { op_type, op_name, file, fn, line };
	return x;
}

int64_t mk_param(hb_module *m, const char *name, hb_arr a, const hb_meta *meta)
{
	int64_t id = hb_param(m, name, a, meta);
	hb_alloc_param(m, hb_buffer(m, id, -1, HB_PARAM));
	return id;
}

int64_t mk_tfusion(hb_module *m, const char *name, const char *kind, const char *root, hb_arr a,
	const int64_t *ops, int nops, const hb_meta *meta, int *buf)
{
	int64_t id = hb_fusion(m, name, kind, root, NULL, a, ops, nops, meta);
	int b = hb_buffer(m, id, -1, HB_TEMP);
	if (buf)
		*buf = b;
	return id;
}

int64_t mk_gemm(hb_module *m, const char *name, hb_arr a, int64_t ws, int64_t x, int64_t y,
	const hb_meta *meta, int *buf)
{
	int64_t ops[2] = { x, y };
	char g[96];
	int64_t cc = hb_custom_call(m, name, "__cublas$lt$matmul", a, ws, ops, 2, meta);
	hb_buffer(m, cc, -1, HB_TEMP);
	int b = hb_buffer(m, cc, 0, HB_TEMP);
	hb_buffer(m, cc, 1, HB_TEMP);
	if (buf)
		*buf = b;
	snprintf(g, sizeof g, "get-tuple-element.%s", name + (strncmp(name, "custom-call", 11) == 0 ? 12 : 0));
	return hb_gte(m, g, cc, 0);
}

int64_t mk_ofusion(hb_module *m, const char *name, const char *root, hb_arr a,
	const int64_t *ops, int nops, const hb_meta *meta)
{
	int64_t id = hb_fusion(m, name, "kLoop", root, NULL, a, ops, nops, meta);
	hb_alloc_output(m, hb_buffer(m, id, -1, HB_OUTPUT));
	return id;
}

void mk_root(hb_module *m, const int64_t *outs, int n)
{
	int64_t r = hb_root_tuple(m, outs, n);
	hb_alloc_output(m, hb_buffer(m, r, -1, HB_OUTPUT));
}

int64_t mk_afusion(hb_module *m, const char *name, const char *root, hb_arr a,
	const int64_t *ops, int nops, const hb_meta *meta)
{
	int64_t id = hb_fusion(m, name, "kLoop", root, NULL, a, ops, nops, meta);
	hb_buffer(m, id, -1, HB_OUTPUT);
	return id;
}
