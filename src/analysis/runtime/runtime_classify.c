/* The runtime, stage 1: event names -> kinds (the F_* flags of
 * runtime_priv.h).  A pure function of a name. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime/runtime.h"
#include "analysis/runtime/runtime_priv.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/lazy.h"
#include "common/map.h"
#include "common/runs.h"

int xpf_rt_perdev_prefix(const char *name, const char **rest)
{
	*rest = name;
	if (name[0] != '[')
		return -1;
	const char *p = name + 1;
	long v = 0;
	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9' && v < 1000000)
		v = v * 10 + (*p++ - '0');
	if (p[0] != ']' || p[1] != ' ')
		return -1;
	*rest = p + 2;
	return (int)v;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && memcmp(s + n - m, suf, m) == 0;
}

unsigned xpf_rt_classify(const char *name, int *dev)
{
	const char *rest;
	unsigned f = 0;
	*dev = xpf_rt_perdev_prefix(name, &rest);
	if (strcmp(name, "MemoryAllocation") == 0)
		return F_ALLOC;
	if (strcmp(name, "MemoryDeallocation") == 0)
		return F_DEALLOC;
	/* the buffer set-up: the old client allocates all of an execution's
	 * buffers in Build buffer allocations, the new one its outputs first
	 * in AllocateOutputBuffersWithInputReuse */
	if (strcmp(name, "Build buffer allocations") == 0 ||
	    strncmp(name, "AllocateOutputBuffers", 21) == 0)
		return F_BUILD;
	if (strcmp(name, "AllocatorRetry::AllocateRaw") == 0)
		return F_RETRY;
	if (strncmp(name, "PjitFunction(", 13) == 0)
		return F_PJIT;
	if (strstr(rest, "Executable::Execute") || strstr(rest, "Executable::EnqueueExecution") ||
	    strncmp(rest, "PJRT_LoadedExecutable_Execute", 29) == 0)
		f |= F_EXEC;
	if (*dev >= 0)
		f |= F_PERDEV;
	if (strncmp(rest, "GpuExecutable::ExecuteThunks", 28) == 0)
		f |= F_THUNKS | F_ANCHOR;
	if (ends_with(name, ":XLA GPU module"))
		f |= F_GPUMOD | F_ANCHOR;
	/* the old client's helper, the new client's one-device helper */
	if ((f & F_EXEC) && ((f & F_PERDEV) || ends_with(rest, "ExecuteHelper") ||
			     ends_with(rest, "ExecuteHelperOnSingleDevice")))
		f |= F_ANCHOR;
	for (size_t i = 0; i < sizeof transfer_names / sizeof *transfer_names; i++)
		if (strcmp(name, transfer_names[i]) == 0)
			f |= F_TRANSFER;
	for (size_t i = 0; i < sizeof transfer_parts / sizeof *transfer_parts; i++)
		if (strstr(name, transfer_parts[i]))
			f |= F_TRANSFER;
	/* the Python side's and the PjRt clients' compile events; the passes
	 * XLA runs inside them (CompileToBackendResult, ...) need no class */
	if (strncmp(name, "backend_compile", 15) == 0 || strstr(name, "Client::Compile") ||
	    strstr(name, "Client_Compile") || strstr(name, "Client::CompileInternal"))
		f |= F_COMPILE;
	if (strncmp(name, "Thunks::", 8) == 0 || strcmp(name, "Resolve constant globals") == 0 ||
	    strncmp(name, "ComputeSemaphoreAcquire", 23) == 0)
		f |= F_NOT_THUNK;
	return f;
}
