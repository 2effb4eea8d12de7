/* The mount's request loop: one thread reads and answers requests, and a
 * second reader is started only when an answer runs long.
 *
 * Why not libfuse's multi-threaded loop: its idle threads queue on
 * /dev/fuse and the kernel hands each request to the one waiting longest,
 * so a walk's requests, which come one at a time (`grep -r`, `find`,
 * `tar`), go round the threads, each woken cold, often on another CPU.
 * Here the thread that answered a request reads the next one; a walk is
 * served as by the single-threaded loop.  What threads are for is kept: a
 * request still being answered 5 to 10 ms after it was read (e.g. the
 * first read of diagnosis.txt, which builds the runtime) hands the reading
 * to another thread, so one slow file never holds up the others.
 *
 * A thread is the reader while it holds `reader`: it reads a request,
 * answers it and reads again.  The watcher (the calling thread) looks
 * every SLOW_NS while requests come; an answer it saw running at its last
 * look and still running now loses the role, and the thread queues for it
 * again once it has answered.  Threads are made as needed, up to
 * MAX_THREADS, and end with the loop.
 *
 * Between requests the reader waits awake for up to SPIN_NS (polling
 * /dev/fuse) before it sleeps in read().  A walk's next request comes
 * within tens of microseconds of the answer, and a request that finds its
 * reader asleep has to wake it: on a virtual machine, waking an idle CPU
 * costs more than most answers (bench/README.md, "Waiting awake").  The
 * wait comes before each read (after an answer, or when a thread takes the
 * role) and is short: a mount nobody reads sleeps in read().
 *
 * Stop signals (libfuse's handlers: HUP, INT, TERM) reach the watcher
 * only: the readers block them, and the watcher unblocks them only inside
 * its wait (ppoll), so one that comes between its look at the session and
 * its wait is taken by the wait, not lost. */
#include "fs/mount_priv.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define SLOW_NS (5 * 1000 * 1000)
#define MAX_THREADS 10
#define SPIN_NS (100 * 1000)

struct reader {
	struct loop *loop;
	pthread_t id;
	struct fuse_buf buf;
};

struct loop {
	struct fuse_session *se;
	pthread_mutex_t mu;
	pthread_cond_t role_free; /* the reader's role was given up */
	int wake;                 /* eventfd: wakes the watcher (a request began, the loop ends) */
	struct reader *reader;    /* who holds the role; NULL: nobody */
	uint64_t taken;           /* requests read so far */
	bool answering;           /* the role's holder is answering request `taken` */
	bool watcher_parked;      /* the watcher sleeps until a request begins */
	bool stop;
	int error; /* a read's error that ended the loop */
	struct reader threads[MAX_THREADS];
	int nthreads, waiting; /* made; queued for the role */
};

static void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
}

static void wake_watcher(struct loop *l) { eventfd_write(l->wake, 1); }

static void end_loop(struct loop *l, int error)
{
	fuse_session_exit(l->se);
	l->stop = true;
	if (error < 0 && l->error == 0)
		l->error = error;
	pthread_cond_broadcast(&l->role_free);
	wake_watcher(l);
}

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Wait awake until a request (or an error: the mount went) is there to
 * read, for at most SPIN_NS. */
static void wait_awake(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int64_t until = now_ns() + SPIN_NS;
	while (poll(&p, 1, 0) == 0 && now_ns() < until)
		;
}

/* Read one request as the reader (mu not held); false when the loop ends.
 * The thread may be cancelled only inside fuse_session_receive_buf,
 * blocked in read(), holding no lock of ours. */
static bool read_one(struct reader *r)
{
	struct loop *l = r->loop;
	int res;
	wait_awake(fuse_session_fd(l->se));
	do {
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		res = fuse_session_receive_buf(l->se, &r->buf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	} while (res == -EINTR && !fuse_session_exited(l->se));
	pthread_mutex_lock(&l->mu);
	if (res <= 0 || fuse_session_exited(l->se)) { /* 0: unmounted */
		end_loop(l, res);
		pthread_mutex_unlock(&l->mu);
		return false;
	}
	l->taken++;
	l->answering = true;
	if (l->watcher_parked) {
		l->watcher_parked = false;
		wake_watcher(l);
	}
	pthread_mutex_unlock(&l->mu);
	return true;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct loop *l = r->loop;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		l->waiting++;
		while (l->reader != NULL && !l->stop)
			pthread_cond_wait(&l->role_free, &l->mu);
		l->waiting--;
		if (l->stop)
			break;
		l->reader = r;
		/* hold the role until the watcher takes it */
		while (l->reader == r && !l->stop) {
			pthread_mutex_unlock(&l->mu);
			if (!read_one(r))
				return NULL;
			fuse_session_process_buf(l->se, &r->buf);
			pthread_mutex_lock(&l->mu);
			if (l->reader == r)
				l->answering = false;
		}
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* A reader more (mu held), with the stop signals blocked: they are the
 * watcher's.  0, or pthread_create's error. */
static int add_reader(struct loop *l)
{
	if (l->nthreads == MAX_THREADS)
		return EAGAIN;
	struct reader *r = &l->threads[l->nthreads];
	*r = (struct reader){ .loop = l };
	sigset_t block, old;
	stop_signals(&block);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	int rc = pthread_create(&r->id, NULL, reader_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		l->nthreads++;
	return rc;
}

/* Sleep until woken (a request began, the loop ends), a signal comes, or
 * ns pass (ns < 0: no limit), with the stop signals let in meanwhile (mu
 * not held).  True when the time ran out. */
static bool wait_watch(struct loop *l, long ns, const sigset_t *let_in)
{
	struct pollfd p = { .fd = l->wake, .events = POLLIN };
	struct timespec t = { 0, ns };
	int rc = ppoll(&p, 1, ns < 0 ? NULL : &t, let_in);
	if (rc > 0) {
		eventfd_t v;
		eventfd_read(l->wake, &v);
	}
	return rc == 0;
}

/* The watcher: while requests come, look every SLOW_NS; an answer seen at
 * the last look and still running gives up the role to a queued thread or
 * a new one.  Idle, sleep until a request begins or a signal comes. */
static void watch(struct loop *l)
{
	sigset_t stops, before, let_in;
	stop_signals(&stops);
	pthread_sigmask(SIG_BLOCK, &stops, &before);
	let_in = before;
	sigdelset(&let_in, SIGHUP);
	sigdelset(&let_in, SIGINT);
	sigdelset(&let_in, SIGTERM);
	pthread_mutex_lock(&l->mu);
	while (!l->stop && !fuse_session_exited(l->se)) {
		uint64_t seen = l->taken;
		bool idle = !l->answering;
		l->watcher_parked = idle;
		pthread_mutex_unlock(&l->mu);
		bool timed_out = wait_watch(l, idle ? -1 : SLOW_NS, &let_in);
		pthread_mutex_lock(&l->mu);
		l->watcher_parked = false;
		if (timed_out && !idle && l->answering && l->taken == seen && l->reader != NULL &&
		    (l->waiting > 0 || add_reader(l) == 0)) {
			l->reader = NULL; /* the slow answer goes on without the role */
			l->answering = false;
			pthread_cond_signal(&l->role_free);
		}
	}
	end_loop(l, 0);
	pthread_mutex_unlock(&l->mu);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
}

int xpf_mount_loop(struct fuse_session *se)
{
	struct loop *l = calloc(1, sizeof *l);
	if (l == NULL)
		return -ENOMEM;
	l->se = se;
	l->wake = eventfd(0, EFD_CLOEXEC);
	if (l->wake < 0) {
		int e = errno;
		free(l);
		return -e;
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->role_free, NULL);
	pthread_mutex_lock(&l->mu);
	int rc = add_reader(l);
	pthread_mutex_unlock(&l->mu);
	if (rc == 0)
		watch(l);
	/* a reader blocked in read() is cancelled there; the others have
	 * seen stop */
	for (int i = 0; i < l->nthreads; i++)
		pthread_cancel(l->threads[i].id);
	for (int i = 0; i < l->nthreads; i++) {
		pthread_join(l->threads[i].id, NULL);
		free(l->threads[i].buf.mem);
	}
	int res = rc != 0 ? -rc : l->error;
	close(l->wake);
	pthread_cond_destroy(&l->role_free);
	pthread_mutex_destroy(&l->mu);
	free(l);
	return res;
}
