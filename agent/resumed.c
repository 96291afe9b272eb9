/*
 * resumed.c: the "resumed" action. The host restored this guest from a
 * saved state (vmux resume) or made it a copy of another (vmux fork): its
 * clock is as old as the state and its RNG is the state's, so the host
 * sends its time and fresh random bytes; a fork also gets its own host name
 * and machine-id. Each part is done or reported on its own: a read-only
 * /etc does not keep the clock from being set.
 */
#include <sys/ioctl.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

/* Set CLOCK_REALTIME to t (seconds since the epoch). */
static int
clock_set(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)floor(t);
	ts.tv_nsec = (long)((t - floor(t)) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_nsec = 999999999L;
	return clock_settime(CLOCK_REALTIME, &ts);
}

/* Mix 32 bytes (64 hex digits) into the kernel's RNG, credited. */
static int
rng_seed(const char *hex)
{
	/* struct rand_pool_info ends in the bytes: room for 32 after it */
	uint32_t words[(sizeof(struct rand_pool_info) + 32) / 4];
	struct rand_pool_info *info = (struct rand_pool_info *)words;
	unsigned char *bytes = (unsigned char *)info->buf;
	int fd, rc;

	memset(words, 0, sizeof words);
	for (size_t i = 0; i < 32; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1; /* can't happen: request.c checked */
		bytes[i] = (unsigned char)v;
	}
	info->entropy_count = 32 * 8;
	info->buf_size = 32;
	if ((fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	rc = ioctl(fd, RNDADDENTROPY, info);
	if (rc != 0) /* not root: mixed in, not credited */
		rc = write_all(fd, bytes, 32) == 32 ? 0 : -1;
	close(fd);
	explicit_bzero(words, sizeof words);
	return rc;
}

/*
 * Give the guest host name name, as vmux-init did at boot: the kernel's,
 * /etc/hostname, and /etc/hosts' own line (127.0.1.1; the other lines, the
 * allowed hosts among them, stay).
 */
static int
hostname_set(const char *name)
{
	char old[8192], *out, *line, *save = NULL;
	ssize_t n;
	int fd, rc;

	if (sethostname(name, strlen(name)) != 0)
		return -1;
	xasprintf(&out, "%s\n", name);
	rc = file_replace("/etc/hostname", out, strlen(out), 0644);
	free(out);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	if ((fd = open("/etc/hosts", O_RDONLY | O_CLOEXEC)) < 0)
		return 0; /* none to keep right */
	n = read_full(fd, old, sizeof old - 1);
	close(fd);
	if (n < 0)
		return -1;
	old[n] = '\0';
	out = xstrdup("");
	for (line = strtok_r(old, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char *more;

		if (strncmp(line, "127.0.1.1", 9) == 0)
			xasprintf(&more, "%s127.0.1.1\t%s\n", out, name);
		else
			xasprintf(&more, "%s%s\n", out, line);
		free(out);
		out = more;
	}
	rc = file_replace("/etc/hosts", out, strlen(out), 0644);
	free(out);
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
}

/* Write /etc/machine-id (a new one for a fork). */
static int
machine_id_set(const char *id)
{
	char line[40];

	int rc;

	snprintf(line, sizeof line, "%s\n", id);
	rc = file_replace("/etc/machine-id", line, strlen(line), 0444);
	if (rc < 0)
		errno = -rc; /* file_replace says -errno */
	return rc < 0 ? -1 : 0;
}

/* Note a failed part in the reply. */
static void
failed(cJSON *obj, const char *what)
{
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, "failed");
	char *s;

	if (arr == NULL)
		arr = cJSON_AddArrayToObject(obj, "failed");
	xasprintf(&s, "%s: %s", what, strerror(errno));
	cJSON_AddItemToArray(arr, cJSON_CreateString(s));
	free(s);
}

/* Apply a resumed request; the reply (the caller deletes it). */
cJSON *
resumed_apply(const struct agent_request *req)
{
	cJSON *obj = cJSON_CreateObject();
	double before = wall_time();

	cJSON_AddBoolToObject(obj, "ok", 1);
	if (clock_set(req->time) != 0)
		failed(obj, "clock");
	else /* how far behind the guest was */
		cJSON_AddNumberToObject(obj, "clock_step", req->time - before);
	if (req->seed != NULL && rng_seed(req->seed) != 0)
		failed(obj, "random");
	if (req->hostname != NULL && hostname_set(req->hostname) != 0)
		failed(obj, "hostname");
	if (req->machine_id != NULL && machine_id_set(req->machine_id) != 0)
		failed(obj, "machine-id");
	activity_touch();
	return obj;
}
