#include "scenarios.h"

void mk_build_attention_too_big(mk_scn *s, int host, int scale);
void mk_build_grads_kept(mk_scn *s, int host, int scale);
void mk_build_no_donation(mk_scn *s, int host, int scale);
void mk_build_foreign_arrays(mk_scn *s, int host, int scale);
void mk_build_scan_fits(mk_scn *s, int host, int scale);
void mk_build_temp_fragmentation(mk_scn *s, int host, int scale);
void mk_build_layout_copy(mk_scn *s, int host, int scale);
void mk_build_convert_copy(mk_scn *s, int host, int scale);
void mk_build_no_runtime(mk_scn *s, int host, int scale);
void mk_build_multi_host(mk_scn *s, int host, int scale);
void mk_build_multi_host_prefetch(mk_scn *s, int host, int scale);
void mk_build_eager(mk_scn *s, int host, int scale);
void mk_build_retrace_oom(mk_scn *s, int host, int scale);
void mk_build_retrace_oom_ambiguous(mk_scn *s, int host, int scale);
void mk_build_compile_oom(mk_scn *s, int host, int scale);

const mk_scenario mk_scenarios[] = {
	{ "attention-too-big", 1, mk_build_attention_too_big,
	  "the plan alone exceeds the pool; naive attention keeps B*H*S*S buffers for the backward pass" },
	{ "grads-kept", 1, mk_build_grads_kept,
	  "each step's gradients are appended to a Python list: in use grows by the non-aliased outputs" },
	{ "no-donation", 1, mk_build_no_donation,
	  "the new state needs new memory because the old state is not donated" },
	{ "foreign-arrays", 1, mk_build_foreign_arrays,
	  "a dataset device_put (and bytes from before the capture) take the room the step needs" },
	{ "scan-fits", 1, mk_build_scan_fits,
	  "MaxText-like llama2-7b on 8 GPUs with FSDP: the scan keeps stacked activations; the step fits" },
	{ "temp-fragmentation", 1, mk_build_temp_fragmentation,
	  "the temp block is twice its simulated peak (51.2% fragmentation) and the step does not fit" },
	{ "layout-copy", 1, mk_build_layout_copy,
	  "transposed copies of frozen weights hoisted out of the loop double their memory" },
	{ "convert-copy", 1, mk_build_convert_copy,
	  "f32 parameters converted to bf16 up front stay live through the heap peak" },
	{ "no-runtime", 1, mk_build_no_runtime,
	  "no allocator events (cuda_async allocator): the plan only, against the device memory" },
	{ "multi-host", 2, mk_build_multi_host,
	  "a run directory of two hosts (worker-0, worker-1) running the same small step; it fits" },
	{ "multi-host-prefetch", 4, mk_build_multi_host_prefetch,
	  "four hosts run the multi-host step; worker-2 alone holds a 512 MiB prefetched batch: host-skew" },
	{ "eager", 1, mk_build_eager,
	  "op by op (40 small modules, each run once): the kept outputs of 39 modules fill the pool; the last OOMs" },
	{ "retrace-oom", 1, mk_build_retrace_oom,
	  "train_step recompiled for a larger last batch: jit_train_step(19) (one host name with (12)) OOMs on its temp block" },
	{ "retrace-oom-ambiguous", 1, mk_build_retrace_oom_ambiguous,
	  "retrace-oom with outputs that do not depend on the batch: only the live arguments tell the failed execution is (19)'s" },
	{ "compile-oom", 1, mk_build_compile_oom,
	  "retrace-oom as today's JAX fails it: the autotuner's scratch for the new shapes fills the pool while it compiles; no module (19)" },
};
const int mk_nscenarios = (int)(sizeof mk_scenarios / sizeof mk_scenarios[0]);
