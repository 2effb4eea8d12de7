/* What touching fresh anonymous memory costs on this machine, the figure
 * behind bench/README.md's "Memory is time here".
 *
 *     cc -O2 -o /tmp/coldmem bench/coldmem.c && /tmp/coldmem
 *
 * It maps 64 MiB, writes one byte per 4 KiB page and unmaps it, with 4 KiB
 * pages and with huge pages (MADV_HUGEPAGE), first right after the previous
 * run freed its memory and then after a pause: a VM that gives freed memory
 * back to its host (virtio-balloon free page reporting) makes the host back
 * it again on the next touch. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SIZE ((size_t)64 << 20)
#define HUGE ((size_t)2 << 20)

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* AnonHugePages of this process (kB): what the kernel really gave. */
static long anon_huge_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "AnonHugePages: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* Milliseconds to touch SIZE fresh bytes (*huge_kb: how many of them were
 * on huge pages); -1 when mmap fails. */
static double touch(int huge, long *huge_kb)
{
	double t0 = now();
	uint8_t *m = mmap(NULL, SIZE + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	if (m == MAP_FAILED)
		return -1;
	uint8_t *p = (uint8_t *)(((uintptr_t)m + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	/* either way asked, so that the system's THP mode does not decide */
	if (madvise(p, SIZE, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0)
		perror("madvise");
	for (size_t i = 0; i < SIZE; i += 4096)
		p[i] = 1;
	double ms = (now() - t0) * 1e3;
	*huge_kb = anon_huge_kb();
	munmap(m, SIZE + HUGE);
	return ms;
}

int main(void)
{
	static const unsigned pauses[] = { 0, 0, 1, 3 };
	long kb;
	for (int huge = 0; huge <= 1; huge++) {
		(void)touch(huge, &kb);
		for (size_t i = 0; i < sizeof pauses / sizeof *pauses; i++) {
			sleep(pauses[i]);
			double ms = touch(huge, &kb);
			printf("%s pages asked, %u s after the last free: %.1f ms for 64 MiB (%.2f ms/MiB), "
			       "%ld kB on huge pages\n",
			       huge ? "huge" : "4 KiB", pauses[i], ms, ms / 64, kb);
		}
	}
	return 0;
}
