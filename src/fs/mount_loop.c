/* The mount's request loop: one thread reads and answers requests, and a
 * second reader is started only when an answer runs long.
 *
 * Why not libfuse's multi-threaded loop: its idle threads queue on
 * /dev/fuse and the kernel hands each request to the one waiting longest,
 * so a walk's requests, which come one at a time (`grep -r`, `find`,
 * `tar`), go round the threads, each woken cold, often on another CPU.
 * Here the thread that answered a request reads the next one; a walk is
 * served as by the single-threaded loop.  What threads are for is kept: a
 * request still being answered after SLOW_NS (a first diagnosis.txt, the
 * runtime's build) hands the reading to another thread, so one slow file
 * never holds up the others.  The calling thread watches for that and
 * takes the stop signals; the readers block them.
 *
 * A thread is the reader while it holds `reader`: it reads a request,
 * answers it and reads again.  The watcher takes the role from it when one
 * answer runs past SLOW_NS; the thread then finishes its answer and queues
 * for the role.  Threads are made as needed, up to MAX_THREADS, and end
 * with the loop. */
#include "fs/mount_priv.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define SLOW_NS (5 * 1000 * 1000)
#define MAX_THREADS 10

struct reader {
	struct loop *loop;
	pthread_t id;
	struct fuse_buf buf;
};

struct loop {
	struct fuse_session *se;
	pthread_mutex_t mu;
	pthread_cond_t role_free; /* the reader's role was given up */
	sem_t watch;              /* wakes the watcher: a request began, or the loop ends */
	struct reader *reader;    /* who holds the role; NULL: nobody */
	uint64_t taken;           /* requests read so far */
	bool answering;           /* the reader is answering request `taken` */
	bool watcher_parked;      /* the watcher sleeps until a request begins */
	bool stop;
	int error; /* a read's error that ended the loop */
	struct reader threads[MAX_THREADS];
	int nthreads, waiting; /* made; queued for the role */
};

static void end_loop(struct loop *l, int error)
{
	fuse_session_exit(l->se);
	l->stop = true;
	if (error < 0 && l->error == 0)
		l->error = error;
	pthread_cond_broadcast(&l->role_free);
	sem_post(&l->watch);
}

/* Read one request as the reader (mu not held); false when the loop ends.
 * Only here may the thread be cancelled: blocked in read(), holding
 * nothing. */
static bool read_one(struct reader *r)
{
	struct loop *l = r->loop;
	int res;
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
		sem_post(&l->watch);
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
	for (;;) {
		l->waiting++;
		while (l->reader != NULL && !l->stop)
			pthread_cond_wait(&l->role_free, &l->mu);
		l->waiting--;
		if (l->stop)
			break;
		l->reader = r;
		/* hold the role until the watcher takes it */
		while (l->reader == r) {
			pthread_mutex_unlock(&l->mu);
			if (!read_one(r))
				return NULL;
			fuse_session_process_buf(l->se, &r->buf);
			pthread_mutex_lock(&l->mu);
			if (l->reader == r)
				l->answering = false;
			if (l->stop)
				break;
		}
		if (l->stop)
			break;
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* A reader more (mu held), with the stop signals blocked: they are the
 * watcher's.  False when none could be made. */
static bool add_reader(struct loop *l)
{
	if (l->nthreads == MAX_THREADS)
		return false;
	struct reader *r = &l->threads[l->nthreads];
	*r = (struct reader){ .loop = l };
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	int rc = pthread_create(&r->id, NULL, reader_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return false;
	l->nthreads++;
	return true;
}

static struct timespec after_ns(long ns)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += ns;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* The watcher (the calling thread): while requests come, look every
 * SLOW_NS; an answer still running since the last look gives up the role
 * to a queued thread or a new one.  Idle, sleep until a request begins;
 * a signal (sem_wait's EINTR) or the loop's end wakes it too. */
static void watch(struct loop *l)
{
	pthread_mutex_lock(&l->mu);
	while (!l->stop && !fuse_session_exited(l->se)) {
		uint64_t seen = l->taken;
		bool idle = !l->answering;
		if (idle)
			l->watcher_parked = true;
		pthread_mutex_unlock(&l->mu);
		if (idle) {
			sem_wait(&l->watch);
		} else {
			struct timespec t = after_ns(SLOW_NS);
			sem_timedwait(&l->watch, &t);
		}
		pthread_mutex_lock(&l->mu);
		if (!idle && l->answering && l->taken == seen && l->reader != NULL &&
		    (l->waiting > 0 || add_reader(l))) {
			l->reader = NULL; /* the slow answer goes on without the role */
			l->answering = false;
			pthread_cond_signal(&l->role_free);
		}
	}
	end_loop(l, 0);
	pthread_mutex_unlock(&l->mu);
}

int xpf_mount_loop(struct fuse_session *se)
{
	struct loop *l = calloc(1, sizeof *l);
	if (l == NULL)
		return -ENOMEM;
	l->se = se;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->role_free, NULL);
	sem_init(&l->watch, 0, 0);
	pthread_mutex_lock(&l->mu);
	bool started = add_reader(l);
	pthread_mutex_unlock(&l->mu);
	if (started)
		watch(l);
	/* a reader blocked in read() is cancelled there; the others have
	 * seen stop */
	for (int i = 0; i < l->nthreads; i++)
		pthread_cancel(l->threads[i].id);
	for (int i = 0; i < l->nthreads; i++) {
		pthread_join(l->threads[i].id, NULL);
		free(l->threads[i].buf.mem);
	}
	int res = started ? l->error : -EAGAIN;
	sem_destroy(&l->watch);
	pthread_cond_destroy(&l->role_free);
	pthread_mutex_destroy(&l->mu);
	free(l);
	return res;
}
