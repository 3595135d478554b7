/* tu.c - generic unit-test helpers; see tu.h. */
#include "tu.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void *
tu_shared_region(size_t size)
{
	void	   *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
	{
		perror("tu_shared_region: mmap");
		abort();
	}
	return p;
}

void
tu_free_region(void *p, size_t size)
{
	munmap(p, size);
}

char *
tu_tempdir(void)
{
	const char *base = getenv("TMPDIR");
	char	   *tmpl;

	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	tmpl = tu_path(base, "leanstore-test-XXXXXX");
	if (mkdtemp(tmpl) == NULL)
	{
		perror("tu_tempdir: mkdtemp");
		abort();
	}
	return tmpl;
}

char *
tu_path(const char *dir, const char *name)
{
	size_t		len = strlen(dir) + strlen(name) + 2;
	char	   *p = malloc(len);

	if (p == NULL)
		abort();
	snprintf(p, len, "%s/%s", dir, name);
	return p;
}

void
tu_rm_rf(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
	{
		unlink(dir);
		return;
	}
	while ((e = readdir(d)) != NULL)
	{
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char	   *p = tu_path(dir, e->d_name);
		struct stat st;

		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			tu_rm_rf(p);
		else
			unlink(p);
		free(p);
	}
	closedir(d);
	rmdir(dir);
}

static uint64_t
tu_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec;
}

/* LEANSTORE_TEST_WORKER_TIMEOUT seconds (default 600). */
static uint64_t
tu_worker_timeout_s(void)
{
	const char *s = getenv("LEANSTORE_TEST_WORKER_TIMEOUT");
	uint64_t	t = s ? strtoull(s, NULL, 10) : 0;

	return t ? t : 600;
}

int
tu_fork_workers(int n, tu_worker_fn fn, void *arg)
{
	pid_t	   *pids = calloc((size_t) n, sizeof(pid_t));
	int			failed = 0;

	if (pids == NULL)
		abort();
	fflush(NULL);
	for (int i = 0; i < n; i++)
	{
		pids[i] = fork();
		if (pids[i] < 0)
		{
			perror("tu_fork_workers: fork");
			failed++;
			continue;
		}
		if (pids[i] == 0)
		{
			int			rc = fn(i, arg);

			fflush(NULL);
			_exit(rc == 0 ? 0 : 1);
		}
	}
	/* poll, so that a hung worker fails the test instead of hanging it */
	uint64_t	deadline = tu_now_s() + tu_worker_timeout_s();
	int			left = 0;

	for (int i = 0; i < n; i++)
		left += pids[i] > 0;
	while (left > 0)
	{
		for (int i = 0; i < n; i++)
		{
			int			status;
			pid_t		r;

			if (pids[i] <= 0)
				continue;
			r = waitpid(pids[i], &status, WNOHANG);
			if (r == 0)
				continue;
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			{
				fprintf(stderr, "tu_fork_workers: worker %d failed (status 0x%x)\n", i,
						r < 0 ? -1 : status);
				failed++;
			}
			pids[i] = 0;
			left--;
		}
		if (left > 0 && tu_now_s() > deadline)
		{
			for (int i = 0; i < n; i++)
				if (pids[i] > 0)
				{
					fprintf(stderr, "tu_fork_workers: worker %d timed out, killed\n", i);
					kill(pids[i], SIGKILL);
					waitpid(pids[i], NULL, 0);
					pids[i] = 0;
					failed++;
					left--;
				}
		}
		if (left > 0)
			usleep(1000);
	}
	free(pids);
	return failed;
}

int
tu_expect_assert(tu_worker_fn fn, void *arg, const char *cond)
{
	char		out[4096];
	size_t		len = 0;
	int			fds[2];
	int			status = 0;
	pid_t		pid;

	if (pipe(fds) != 0)
		return 1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
	{
		perror("tu_expect_assert: fork");
		return 1;
	}
	if (pid == 0)
	{
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		fn(0, arg);
		_exit(0);
	}
	close(fds[1]);
	for (;;)
	{
		ssize_t		r = read(fds[0], out + len, sizeof(out) - 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t) r;
		if (len == sizeof(out) - 1)
			break;
	}
	out[len] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
		strstr(out, "assertion failed") != NULL && strstr(out, cond) != NULL)
		return 0;
	fprintf(stderr, "tu_expect_assert: wanted a failed check naming \"%s\", got status 0x%x and: %s\n",
			cond, status, out);
	return 1;
}

uint64_t
tu_scaled(uint64_t n)
{
	const char *s = getenv("LEANSTORE_TEST_SCALE");
	uint64_t	pct = 100;

	if (s != NULL && s[0] != '\0')
	{
		if (strcmp(s, "asan") == 0)
			pct = 25;
		else
		{
			pct = strtoull(s, NULL, 10);
			if (pct == 1 || pct == 0)
				pct = 100;
		}
	}
	n = n * pct / 100;
	return n ? n : 1;
}

void
tu_barrier_init(tu_barrier *b, uint32_t n)
{
	atomic_store(&b->arrived, 0);
	b->n = n;
}

void
tu_barrier_wait(tu_barrier *b)
{
	atomic_fetch_add(&b->arrived, 1);
	while (atomic_load(&b->arrived) < b->n)
		sched_yield();
}

ls_status
tu_pool_open(tu_pool *p, uint64_t frames, ls_bm_config cfg)
{
	p->dir = tu_tempdir();
	p->path = tu_path(p->dir, "");
	p->region_size = ls_bm_region_size(frames);
	p->region = tu_shared_region(p->region_size);
	p->bm = NULL;
	cfg.n_frames = frames;
	cfg.data_dir = p->dir;
	return ls_bm_init(p->region, p->region_size, &cfg, &p->bm);
}

void
tu_pool_close(tu_pool *p)
{
	if (p->bm != NULL)
		ls_bm_process_detach(p->bm);
	tu_free_region(p->region, p->region_size);
	tu_rm_rf(p->dir);
	free(p->path);
	free(p->dir);
	memset(p, 0, sizeof(*p));
}

char *
tu_pool_page_file(const tu_pool *p, ls_pid pid, off_t *off)
{
	char		name[32];

	snprintf(name, sizeof(name), "dt%u", ls_pid_dt(pid));
	*off = (off_t) ls_pid_block(pid) * LS_PAGE_SIZE;
	return tu_path(p->dir, name);
}
