/* The report tree's folder and file names (SPEC §3), spelled here once:
 * src/tree makes its nodes with them, and the findings of src/analysis
 * cite them as evidence (XPF_EV_*: a path from a host's root, printf
 * formats).  A new file gets its name here. */
#ifndef XPF_PATHS_H
#define XPF_PATHS_H

#define XPF_D_CAPTURE "capture"
#define XPF_D_MODULES "modules"
#define XPF_D_RUNTIME "runtime"
#define XPF_D_HOSTS "hosts"
#define XPF_D_COMPARE "compare"
#define XPF_D_EXECUTIONS "executions"
#define XPF_D_BASE "base"

#define XPF_F_PLANES_TSV "planes.tsv"
#define XPF_F_DEVICES_TSV "devices.tsv"
#define XPF_F_ERRORS_TXT "errors.txt"
#define XPF_F_INDEX_TSV "index.tsv"
#define XPF_F_PLAN_JSON "plan.json"
#define XPF_F_SUMMARY_TXT "summary.txt"
#define XPF_F_PEAK_BUFFERS_TSV "peak_buffers.tsv"
#define XPF_F_BUFFERS_TSV "buffers.tsv"
#define XPF_F_ALLOCATIONS_TSV "allocations.tsv"
#define XPF_F_HEAP_TSV "heap.tsv"
#define XPF_F_HEAP_SVG "heap.svg"
#define XPF_F_BY_SOURCE_TSV "by_source.tsv"
#define XPF_F_INSTRUCTIONS_TSV "instructions.tsv"
#define XPF_F_PEAK_PB_GZ "peak.pb.gz"
#define XPF_F_ALLOCATORS_TSV "allocators.tsv"
#define XPF_F_EVENTS_TSV "events.tsv"
#define XPF_F_TIMELINE_SVG "timeline.svg"
#define XPF_F_MEMORY_TRACE_JSON "memory.trace.json"
#define XPF_F_EXECUTIONS_TSV "executions.tsv"
#define XPF_F_LIVE_TSV "live.tsv"
#define XPF_F_LIVE_PB_GZ "live.pb.gz"
#define XPF_F_RETRIES_TSV "retries.tsv"
#define XPF_F_COMPILES_TSV "compiles.tsv"
#define XPF_F_BETWEEN_TSV "between.tsv"
#define XPF_F_DIAGNOSIS_TXT "diagnosis.txt"
#define XPF_F_DIAGNOSIS_JSON "diagnosis.json"
#define XPF_F_CHECKS_TXT "checks.txt"
#define XPF_F_HOSTS_TSV "hosts.tsv"
#define XPF_F_MODULES_TSV "modules.tsv"
#define XPF_F_README "README"

/* Evidence paths from a host's root: f is one of the names above. */
#define XPF_EV_CAPTURE(f) XPF_D_CAPTURE "/" f
#define XPF_EV_MODULE(f) XPF_D_MODULES "/%s/" f /* module dir */
#define XPF_EV_RUNTIME(f) XPF_D_RUNTIME "/" f
#define XPF_EV_EXECUTION(f) XPF_D_RUNTIME "/" XPF_D_EXECUTIONS "/%u/" f /* n */
#define XPF_EV_HOST(p) XPF_D_HOSTS "/%s/" p                             /* host dir */

#endif
