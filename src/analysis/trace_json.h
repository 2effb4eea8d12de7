/* runtime/memory.trace.json: memory over time as Chrome trace-event JSON
 * for Perfetto (SPEC §9; the format is described in trace_json.c). */
#ifndef XPF_TRACE_JSON_H
#define XPF_TRACE_JSON_H

#include "analysis/host.h"

int xpf_render_trace_json(xpf_host *h, long arg, xpf_buf *out, xpf_error *err);

#endif
