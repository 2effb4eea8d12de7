/* Scenario definitions: each fills an mk_scn (modules and runtime script)
 * whose decoded figures are documented in tests/scenarios/<name>.json. */
#ifndef MK_SCENARIOS_H
#define MK_SCENARIOS_H

#include "runtime.h"

typedef struct mk_scenario {
	const char *name;
	int hosts; /* > 1: OUT is a run directory of <host>.xplane.pb */
	void (*build)(mk_scn *s, int host, int scale);
	const char *summary;
} mk_scenario;

extern const mk_scenario mk_scenarios[];
extern const int mk_nscenarios;

/* Shared building blocks (scenarios_common.c). */
#define MiB (1024ll * 1024)
#define GiB (1024ll * MiB)
#define MK_POOL_CAPACITY 2995650816ll   /* 2.79 GiB */
#define MK_POOL_MEMORY 3994201088ull    /* capacity / 0.75 */

hb_meta mk_meta(const char *op_type, const char *op_name, const char *file, const char *fn, int line);
/* A parameter with its allocation; returns the instruction id. */
int64_t mk_param(hb_module *m, const char *name, hb_arr a, const hb_meta *meta);
/* A fusion whose result is a temp buffer; *buf receives the buffer. */
int64_t mk_tfusion(hb_module *m, const char *name, const char *kind, const char *root, hb_arr a,
	const int64_t *ops, int nops, const hb_meta *meta, int *buf);
/* A library GEMM (custom-call returning (out, s8[ws])); returns the
 * get-tuple-element of the result, whose buffer is in *buf. */
int64_t mk_gemm(hb_module *m, const char *name, hb_arr a, int64_t ws, int64_t x, int64_t y,
	const hb_meta *meta, int *buf);
/* A fusion producing an output (own allocation). */
int64_t mk_ofusion(hb_module *m, const char *name, const char *root, hb_arr a,
	const int64_t *ops, int nops, const hb_meta *meta);
/* The entry root tuple with its own output allocation. */
void mk_root(hb_module *m, const int64_t *outs, int n);



/* --lm: a transformer LM's train step of the given shape (lm.c). */
enum { MK_LM_LOOP, MK_LM_SCAN, MK_LM_FLAX };
typedef struct mk_lm_opt {
	int layers;
	int64_t batch, seq, dim, heads, vocab, capacity;
	int form; /* MK_LM_* */
	int bf16, upcast, remat;
	int64_t foreign; /* an array of other data on the device, in bytes */
	int pre;	 /* the parameters (and foreign) put before the capture */
} mk_lm_opt;
/* Parse "layers=6,scan,dtype=bf16,..." into o (defaults first); the
 * first item it does not know into bad, and -1. */
int mk_parse_lm(const char *spec, mk_lm_opt *o, char *bad, size_t nbad);
void mk_build_lm(mk_scn *s, const mk_lm_opt *o);

/* A fusion whose output aliases a donated parameter (no allocation of its own). */
int64_t mk_afusion(hb_module *m, const char *name, const char *root, hb_arr a,
	const int64_t *ops, int nops, const hb_meta *meta);
#endif
