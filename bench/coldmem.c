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

/* Milliseconds to touch SIZE fresh bytes; -1 when mmap fails. */
static double touch(int huge)
{
	double t0 = now();
	uint8_t *m = mmap(NULL, SIZE + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	if (m == MAP_FAILED)
		return -1;
	uint8_t *p = (uint8_t *)(((uintptr_t)m + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	if (huge)
		madvise(p, SIZE, MADV_HUGEPAGE);
	for (size_t i = 0; i < SIZE; i += 4096)
		p[i] = 1;
	double ms = (now() - t0) * 1e3;
	munmap(m, SIZE + HUGE);
	return ms;
}

int main(void)
{
	static const unsigned pauses[] = { 0, 0, 1, 3 };
	for (int huge = 0; huge <= 1; huge++) {
		(void)touch(huge);
		for (size_t i = 0; i < sizeof pauses / sizeof *pauses; i++) {
			sleep(pauses[i]);
			double ms = touch(huge);
			printf("%s pages, %u s after the last free: %.1f ms for 64 MiB (%.2f ms/MiB)\n",
			       huge ? "huge" : "4 KiB", pauses[i], ms, ms / 64);
		}
	}
	return 0;
}
