/*
 * record.c: session records (session.json), listing and CID allocation.
 *
 * A record is written whole to a temporary file and renamed over the old
 * one, so readers see either the old or the new record and a failed write
 * (disk full, no permission) leaves the old record untouched. `vmux new`
 * picks a CID and writes its first record while holding the home's lock
 * file, so concurrent creations never share a CID.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/* Records are small; anything bigger is not ours. */
#define RECORD_MAX (1024 * 1024)

/* Free n strings and their array. */
static void
strv_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/*
 * A new instance id: 128 random bits as 32 hex digits. Two sessions made
 * under one name in the same second (rm, then new --count) differ here,
 * where their creation times do not. Free it.
 */
char *
record_instance_new(void)
{
	unsigned char b[16];
	char *s = xmalloc(2 * sizeof b + 1);
	size_t got = 0, i;
	ssize_t n;

	while (got < sizeof b) {
		n = getrandom(b + got, sizeof b - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fatalx("getrandom: %s",
			    strerror(errno)); /* can't happen */
		got += (size_t)n;
	}
	for (i = 0; i < sizeof b; i++)
		snprintf(s + 2 * i, 3, "%02x", b[i]);
	return s;
}

/*
 * The instance id of session name into *out (free it); a record older than
 * instances gets one now, under the session's lock. 0, or -1 with cause.
 */
int
record_instance_get(
    const char *home, const char *name, char **out, char **cause)
{
	struct session_record r;
	char *dir = session_dir(home, name);
	int lock, rc = 0;

	*out = NULL;
	lock = session_lock_one(dir, "vmux grant", 10000, NULL, cause);
	free(dir);
	if (lock < 0)
		return -1;
	if (record_load(home, name, &r, cause) != 0) {
		session_unlock(lock);
		return -1;
	}
	if (r.instance == NULL) {
		r.instance = record_instance_new();
		r.instance_late = 1; /* grants made before it still hold */
		rc = record_save(&r, cause);
	}
	if (rc == 0)
		*out = xstrdup(r.instance);
	record_free(&r);
	session_unlock(lock);
	return rc;
}

/* Free what a record owns and zero it. */
void
record_free(struct session_record *r)
{
	free(r->name);
	free(r->instance);
	free(r->hostname);
	free(r->dir);
	free(r->accel);
	free(r->vsock_uds);
	free(r->vhost_user);
	free(r->qmp);
	free(r->sock_dir);
	free(r->ram_file);
	free(r->console_log);
	free(r->console_sock);
	free(r->append);
	free(r->rescue_disk);
	free(r->qemu_log);
	free(r->bridge_log);
	free(r->qemu_bin);
	free(r->bridge_bin);
	free(r->kernel);
	free(r->initrd);
	free(r->allow_ports);
	free(r->workspace);
	free(r->stop_reason);
	free(r->profile);
	free(r->root_image);
	free(r->image_ref);
	free(r->image_digest);
	free(r->state_key);
	free(r->state_sum);
	free(r->parent);
	strv_free(r->allow_hosts, r->nallow_hosts);
	strv_free(r->labels, r->nlabels);
	strv_free(r->publish, r->npublish);
	for (size_t i = 0; i < r->nmounts; i++)
		mount_free(&r->mounts[i]);
	free(r->mounts);
	memset(r, 0, sizeof *r);
}

/* Add a string, or null when s is NULL. */
static void
add_str(cJSON *o, const char *key, const char *s)
{
	if (s != NULL)
		cJSON_AddStringToObject(o, key, s);
	else
		cJSON_AddNullToObject(o, key);
}

/*
 * The record's plain text fields: key (and an older record's), where struct
 * session_record keeps it, whether a record must have it, and the views
 * that show it (the record file; ls --json, which shows a few). Read,
 * written and shown from here; the settings are session_options'.
 */
#define RS(member) offsetof(struct session_record, member)
static const struct record_str {
	const char *key, *old_key;
	size_t off;
	int required;
	unsigned views; /* RECORD_VIEW_* */
} record_strs[] = {
    {"name", NULL, RS(name), 1, RECORD_VIEW_FILE},
    {"instance", NULL, RS(instance), 0, RECORD_VIEW_FILE},
    {"dir", NULL, RS(dir), 1, RECORD_VIEW_FILE | RECORD_VIEW_LS},
    {"accel", NULL, RS(accel), 1, RECORD_VIEW_FILE | RECORD_VIEW_LS},
    {"vsock_uds", NULL, RS(vsock_uds), 0, RECORD_VIEW_FILE | RECORD_VIEW_LS},
    {"vhost_user", NULL, RS(vhost_user), 0, RECORD_VIEW_FILE},
    {"qmp", NULL, RS(qmp), 0, RECORD_VIEW_FILE},
    {"sock_dir", NULL, RS(sock_dir), 0, RECORD_VIEW_FILE},
    {"ram_file", NULL, RS(ram_file), 0, RECORD_VIEW_FILE},
    {"console_log", NULL, RS(console_log), 0, RECORD_VIEW_FILE},
    {"console_sock", NULL, RS(console_sock), 0, RECORD_VIEW_FILE},
    {"qemu_log", NULL, RS(qemu_log), 0, RECORD_VIEW_FILE},
    {"bridge_log", NULL, RS(bridge_log), 0, RECORD_VIEW_FILE},
    {"qemu_bin", NULL, RS(qemu_bin), 0, RECORD_VIEW_FILE},
    {"bridge_bin", NULL, RS(bridge_bin), 0, RECORD_VIEW_FILE},
    {"kernel", NULL, RS(kernel), 0, RECORD_VIEW_FILE},
    {"initrd", NULL, RS(initrd), 0, RECORD_VIEW_FILE},
    {"workspace", NULL, RS(workspace), 0, RECORD_VIEW_FILE},
    {"stopped_by", "stop_reason", RS(stop_reason), 0, RECORD_VIEW_FILE},
    {"profile", NULL, RS(profile), 0, RECORD_VIEW_FILE},
    {"root_image", NULL, RS(root_image), 0, RECORD_VIEW_FILE | RECORD_VIEW_LS},
    {"append", NULL, RS(append), 0, RECORD_VIEW_FILE | RECORD_VIEW_LS},
    {"image", NULL, RS(image_ref), 0, RECORD_VIEW_FILE | RECORD_VIEW_LS},
    {"image_digest", NULL, RS(image_digest), 0,
        RECORD_VIEW_FILE | RECORD_VIEW_LS},
    {"state_key", NULL, RS(state_key), 0, RECORD_VIEW_FILE},
    {"state_sum", NULL, RS(state_sum), 0, RECORD_VIEW_FILE},
    {"parent", NULL, RS(parent), 0, RECORD_VIEW_FILE | RECORD_VIEW_LS},
};

/* A record_strs row's field in r. */
static char **
record_str_at(const struct session_record *r, const struct record_str *f)
{
	return (char **)((char *)r + f->off);
}

/* Add r's plain text fields that view shows (null when unset). */
void
record_strs_json(cJSON *o, const struct session_record *r, unsigned view)
{
	for (size_t i = 0; i < nitems(record_strs); i++)
		if (record_strs[i].views & view)
			add_str(o, record_strs[i].key,
			    *record_str_at(r, &record_strs[i]));
}

/* Add an array of strings. */
static void
add_strv(cJSON *o, const char *key, char *const *v, size_t n)
{
	cJSON *a = cJSON_AddArrayToObject(o, key);
	size_t i;

	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
}

/* Read an optional array of strings; -1 if present but not one. */
static int
get_strv(const cJSON *o, const char *key, char ***out, size_t *n, char **cause)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *e;

	*out = NULL;
	*n = 0;
	if (a == NULL)
		return 0;
	if (!cJSON_IsArray(a))
		goto bad;
	cJSON_ArrayForEach(e, a)
	{
		if (!cJSON_IsString(e) || e->valuestring == NULL)
			goto bad;
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		(*out)[(*n)++] = xstrdup(e->valuestring);
	}
	return 0;
bad:
	xasprintf(cause, "bad \"%s\"", key);
	return -1;
}

static int get_str(const cJSON *, const char *, char **, int, char **);
static int get_int(
    const cJSON *, const char *, double, double, int64_t *, char **);

/* Read the optional "mounts" array into r. */
static int
get_mounts(const cJSON *o, struct session_record *r, char **cause)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "mounts"), *e;
	struct session_mount *m;
	int64_t pid;

	if (a == NULL)
		return 0;
	if (!cJSON_IsArray(a))
		goto bad;
	cJSON_ArrayForEach(e, a)
	{
		r->mounts =
		    xreallocarray(r->mounts, r->nmounts + 1, sizeof *r->mounts);
		m = &r->mounts[r->nmounts];
		memset(m, 0, sizeof *m);
		r->nmounts++;
		if (!cJSON_IsObject(e) ||
		    get_str(e, "host", &m->host, 1, cause) != 0 ||
		    get_str(e, "guest", &m->guest, 1, cause) != 0 ||
		    get_int(e, "pid", 0, 0x7fffffff, &pid, cause) != 0)
			goto bad;
		m->ro = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "ro"));
		m->pid = (pid_t)pid;
	}
	return 0;
bad:
	free(*cause);
	xasprintf(cause, "bad \"mounts\"");
	return -1;
}

/* What a record says of its state ("state"; "status" before, with "ready"
 * for "running"). */
static const char *const status_names[] = {
    [SESSION_STARTING] = "starting",
    [SESSION_READY] = "running",
    [SESSION_STOPPING] = "stopping",
    [SESSION_STOPPED] = "stopped",
    [SESSION_PAUSED] = "paused",
};

/* A record as JSON (the file format; `vmux ls --json` uses its own). */
cJSON *
record_to_json(const struct session_record *r)
{
	cJSON *o = cJSON_CreateObject(), *pids, *ports, *mounts;
	char *created = time_rfc3339((double)r->created);
	size_t i;

	cJSON_AddNumberToObject(o, "version", SESSION_VERSION);
	record_strs_json(o, r, RECORD_VIEW_FILE);
	if (r->instance_late)
		cJSON_AddBoolToObject(o, "instance_late", 1);
	add_str(o, "state", status_names[r->status]);
	cJSON_AddNumberToObject(o, "cid", r->cid);
	add_str(o, "vsock", r->vsock_kernel ? "kernel" : "bridge");
	pids = cJSON_AddObjectToObject(o, "pids");
	cJSON_AddNumberToObject(pids, "qemu", r->qemu_pid);
	cJSON_AddNumberToObject(pids, "bridge", r->bridge_pid);
	cJSON_AddNumberToObject(pids, "console", r->console_pid);
	cJSON_AddNumberToObject(pids, "recorder", r->recorder_pid);
	add_str(o, "created", created);
	cJSON_AddNumberToObject(o, "created_unix", (double)r->created);
	ports = cJSON_AddArrayToObject(o, "allow_ports");
	for (i = 0; i < r->nallow_ports; i++)
		cJSON_AddItemToArray(
		    ports, cJSON_CreateNumber(r->allow_ports[i]));
	cJSON_AddBoolToObject(o, "workspace_owned", r->workspace_owned);
	cJSON_AddNumberToObject(o, "started_unix", (double)r->started);
	cJSON_AddNumberToObject(o, "stopped_unix", (double)r->stopped);
	if (r->paused > 0)
		cJSON_AddNumberToObject(o, "paused_unix", (double)r->paused);
	add_strv(o, "allow_hosts", r->allow_hosts, r->nallow_hosts);
	add_strv(o, "publish", r->publish, r->npublish);
	add_strv(o, "labels", r->labels, r->nlabels);
	mounts = cJSON_AddArrayToObject(o, "mounts");
	for (i = 0; i < r->nmounts; i++) {
		cJSON *m = cJSON_CreateObject();
		add_str(m, "host", r->mounts[i].host);
		add_str(m, "guest", r->mounts[i].guest);
		cJSON_AddBoolToObject(m, "ro", r->mounts[i].ro);
		cJSON_AddNumberToObject(m, "pid", r->mounts[i].pid);
		cJSON_AddItemToArray(mounts, m);
	}
	if (r->no_agent)
		cJSON_AddBoolToObject(o, "no_agent", 1);
	cJSON_AddBoolToObject(o, "record", r->record);
	cJSON_AddBoolToObject(o, "record_input", r->record_input);
	if (r->rescue_disk != NULL) {
		add_str(o, "rescue_disk", r->rescue_disk);
		cJSON_AddBoolToObject(o, "rescue_rw", r->rescue_rw);
	}
	/* the settings, by the table: one name a fact */
	for (i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		if (so->rec_off != SOPT_NOWHERE)
			cJSON_AddItemToObject(
			    o, so->key, option_to_json(so, r));
	}
	free(created);
	return o;
}

/* Read an optional integer field in [min, max] (absent: 0). */
static int
get_opt_int(const cJSON *o, const char *key, double min, double max,
    int64_t *out, char **cause)
{
	*out = 0;
	if (cJSON_GetObjectItemCaseSensitive(o, key) == NULL)
		return 0;
	return get_int(o, key, min, max, out, cause);
}

/* Copy an optional string field; -1 if present but not a string or null. */
static int
get_str(const cJSON *o, const char *key, char **out, int required, char **cause)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*out = NULL;
	if (cJSON_IsString(v) && v->valuestring != NULL) {
		*out = xstrdup(v->valuestring);
		return 0;
	}
	if (!required && (v == NULL || cJSON_IsNull(v)))
		return 0;
	xasprintf(cause, "bad or missing \"%s\"", key);
	return -1;
}

/* Read an integer field in [min, max]; -1 if missing or out of range. */
static int
get_int(const cJSON *o, const char *key, double min, double max, int64_t *out,
    char **cause)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < min ||
	    v->valuedouble > max || v->valuedouble != (int64_t)v->valuedouble) {
		xasprintf(cause, "bad or missing \"%s\"", key);
		return -1;
	}
	*out = (int64_t)v->valuedouble;
	return 0;
}

/* Fill r from a parsed record; on failure r is freed and cause set. */
int
record_from_json(const cJSON *o, struct session_record *r, char **cause)
{
	const cJSON *pids, *ports, *p;
	char *status = NULL, *vsock = NULL;
	int64_t n;
	size_t i;

	memset(r, 0, sizeof *r);
	*cause = NULL;
	if (!cJSON_IsObject(o)) {
		xasprintf(cause, "not a JSON object");
		return -1;
	}
	if (get_int(o, "version", 1, SESSION_VERSION, &n, cause) != 0)
		goto fail;
	for (i = 0; i < nitems(record_strs); i++) {
		const struct record_str *f = &record_strs[i];
		const char *key = f->key;

		if (f->old_key != NULL && !cJSON_HasObjectItem(o, key))
			key = f->old_key;
		if (get_str(o, key, record_str_at(r, f), f->required, cause) !=
		    0)
			goto fail;
	}
	if (get_str(o, cJSON_HasObjectItem(o, "state") ? "state" : "status",
	        &status, 1, cause) != 0 ||
	    get_str(o, "vsock", &vsock, 1, cause) != 0 ||
	    get_str(o, "rescue_disk", &r->rescue_disk, 0, cause) != 0)
		goto fail;
	if (session_name_valid(r->name, NULL) != 0) {
		xasprintf(cause, "bad \"name\"");
		goto fail;
	}
	/* it goes into authorized_keys command lines: 32 hex digits only */
	if (r->instance != NULL &&
	    (strlen(r->instance) != 32 ||
	        strspn(r->instance, "0123456789abcdef") != 32)) {
		xasprintf(cause, "bad \"instance\"");
		goto fail;
	}
	r->instance_late =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "instance_late"));
	if (strcmp(status, "ready") == 0) /* before "running" */
		i = SESSION_READY;
	else
		for (i = 0; i < sizeof status_names / sizeof *status_names;
		     i++) {
			if (strcmp(status, status_names[i]) == 0)
				break;
		}
	if (i == sizeof status_names / sizeof *status_names) {
		xasprintf(cause, "bad \"state\"");
		goto fail;
	}
	r->status = (int)i;
	if (get_opt_int(o, "started_unix", 0, 1e15, &r->started, cause) != 0 ||
	    get_opt_int(o, "stopped_unix", 0, 1e15, &r->stopped, cause) != 0 ||
	    get_opt_int(o, "paused_unix", 0, 1e15, &r->paused, cause) != 0 ||
	    get_strv(o, "allow_hosts", &r->allow_hosts, &r->nallow_hosts,
	        cause) != 0 ||
	    get_strv(o, "publish", &r->publish, &r->npublish, cause) != 0 ||
	    get_strv(o, "labels", &r->labels, &r->nlabels, cause) != 0 ||
	    labels_valid(r->labels, r->nlabels, cause) != 0 ||
	    get_mounts(o, r, cause) != 0)
		goto fail;
	/* the settings, by the table (under an older name in older records) */
	for (i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		const cJSON *v;
		if (so->rec_off == SOPT_NOWHERE)
			continue;
		v = cJSON_GetObjectItemCaseSensitive(o, so->key);
		if (v == NULL && so->old_key != NULL)
			v = cJSON_GetObjectItemCaseSensitive(o, so->old_key);
		if (option_from_json(so, v, r, cause) != 0)
			goto fail;
	}
	if (r->cpus < 1 || r->memory_mb < 1) {
		xasprintf(cause, "bad or missing \"%s\"",
		    r->cpus < 1 ? "cpus" : "memory_mb");
		goto fail;
	}
	r->no_agent =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "no_agent"));
	r->record = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "record"));
	r->record_input =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "record_input"));
	r->rescue_rw =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "rescue_rw"));
	r->workspace_owned = cJSON_IsTrue(
	    cJSON_GetObjectItemCaseSensitive(o, "workspace_owned"));
	if (strcmp(vsock, "kernel") == 0)
		r->vsock_kernel = 1;
	else if (strcmp(vsock, "bridge") != 0) {
		xasprintf(cause, "bad \"vsock\"");
		goto fail;
	}
	if (get_int(o, "cid", SESSION_CID_FIRST, 0xfffffffe, &n, cause) != 0)
		goto fail;
	r->cid = (unsigned)n;
	pids = cJSON_GetObjectItemCaseSensitive(o, "pids");
	if (!cJSON_IsObject(pids)) {
		xasprintf(cause, "bad or missing \"pids\"");
		goto fail;
	}
	if (get_int(pids, "qemu", 0, 0x7fffffff, &n, cause) != 0)
		goto fail;
	r->qemu_pid = (pid_t)n;
	if (get_int(pids, "bridge", 0, 0x7fffffff, &n, cause) != 0)
		goto fail;
	r->bridge_pid = (pid_t)n;
	if (get_opt_int(pids, "console", 0, 0x7fffffff, &n, cause) != 0)
		goto fail;
	r->console_pid = (pid_t)n;
	if (get_opt_int(pids, "recorder", 0, 0x7fffffff, &n, cause) != 0)
		goto fail;
	r->recorder_pid = (pid_t)n;
	if (get_int(o, "created_unix", 0, 1e15, &r->created, cause) != 0)
		goto fail;
	ports = cJSON_GetObjectItemCaseSensitive(o, "allow_ports");
	if (ports != NULL && !cJSON_IsArray(ports)) {
		xasprintf(cause, "bad \"allow_ports\"");
		goto fail;
	}
	cJSON_ArrayForEach(p, ports)
	{
		if (!cJSON_IsNumber(p) || p->valuedouble < 0 ||
		    p->valuedouble > 0xffffffffu) {
			xasprintf(cause, "bad \"allow_ports\"");
			goto fail;
		}
		r->allow_ports = xreallocarray(r->allow_ports,
		    r->nallow_ports + 1, sizeof *r->allow_ports);
		r->allow_ports[r->nallow_ports++] = (unsigned)p->valuedouble;
	}
	free(status);
	free(vsock);
	return 0;
fail:
	free(status);
	free(vsock);
	record_free(r);
	return -1;
}

/* Rewrite r's record in its own directory. 0 or -1 with cause. */
int
record_save(const struct session_record *r, char **cause)
{
	char *path = record_path(r->dir);
	int rc = record_write(path, r, cause);

	free(path);
	return rc;
}

/* Path of the record file in a session directory. */
char *
record_path(const char *dir)
{
	char *out;

	xasprintf(&out, "%s/%s", dir, SESSION_RECORD);
	return out;
}

/* Write r to path atomically (temporary file, fsync, rename). */
int
record_write(const char *path, const struct session_record *r, char **cause)
{
	cJSON *o = record_to_json(r);
	char *text = cJSON_Print(o);
	size_t len;
	int error;

	cJSON_Delete(o);
	if (text == NULL)
		fatalx("out of memory");
	len = strlen(text);
	text[len++] = '\n'; /* replaces the NUL; we write len bytes */
	if ((error = file_replace(path, text, len, 0600)) != 0)
		xasprintf(cause, "cannot write %s: %s", path, strerror(-error));
	cJSON_free(text);
	return error == 0 ? 0 : -1;
}

/* Read and check the record at path. */
int
record_read(const char *path, struct session_record *r, char **cause)
{
	char *buf = NULL, *why = NULL;
	cJSON *o;
	int fd, rc;
	ssize_t n;

	memset(r, 0, sizeof *r);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		xasprintf(cause, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	buf = xmalloc(RECORD_MAX + 1);
	n = read_full(fd, buf, RECORD_MAX + 1);
	close(fd);
	if (n < 0 || n > RECORD_MAX) {
		xasprintf(cause, "cannot read %s: %s", path,
		    n < 0 ? strerror((int)-n) : "too large");
		free(buf);
		return -1;
	}
	o = cJSON_ParseWithLength(buf, (size_t)n);
	free(buf);
	if (o == NULL) {
		xasprintf(cause, "%s: not valid JSON", path);
		return -1;
	}
	rc = record_from_json(o, r, &why);
	cJSON_Delete(o);
	if (rc != 0) {
		xasprintf(cause, "%s: %s", path, why);
		free(why);
	}
	return rc;
}

/* Load session name's record; a clear cause when there is no such session. */
int
record_load(
    const char *home, const char *name, struct session_record *r, char **cause)
{
	char *dir, *path;
	struct stat st;
	int rc;

	memset(r, 0, sizeof *r);
	if (session_name_valid(name, cause) != 0)
		return -1;
	dir = session_dir(home, name);
	if (stat(dir, &st) != 0) {
		xasprintf(cause, "no session named '%s'", name);
		free(dir);
		return -1;
	}
	path = record_path(dir);
	if (access(path, F_OK) != 0) {
		xasprintf(cause,
		    "session '%s' has no record yet (still starting, or "
		    "broken: vmux rm -f %s)",
		    name, name);
		rc = -1;
	} else
		rc = record_read(path, r, cause);
	free(path);
	free(dir);
	return rc;
}

/* The lowest CID >= 3 not in used[]. */
unsigned
cid_pick(const unsigned *used, size_t n)
{
	unsigned cid;
	size_t i;

	for (cid = SESSION_CID_FIRST;; cid++) {
		for (i = 0; i < n; i++) {
			if (used[i] == cid)
				break;
		}
		if (i == n)
			return cid;
	}
}

/* qsort comparator for entries by name. */
static int
entry_cmp(const void *a, const void *b)
{
	const struct session_entry *ea = a, *eb = b;

	return strcmp(ea->name, eb->name);
}

/* List every session under home, sorted by name (unreadable ones too). */
int
session_list(
    const char *home, struct session_entry **out, size_t *n, char **cause)
{
	struct session_entry *v = NULL;
	struct dirent *de;
	char *sessions, *dir, *path;
	size_t count = 0;
	DIR *d;

	*out = NULL;
	*n = 0;
	xasprintf(&sessions, "%s/sessions", home);
	d = opendir(sessions);
	if (d == NULL) {
		int error = errno;
		free(sessions);
		if (error == ENOENT)
			return 0;
		xasprintf(cause, "cannot list %s/sessions: %s", home,
		    strerror(error));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (session_name_valid(de->d_name, NULL) != 0)
			continue;
		dir = session_dir(home, de->d_name);
		struct stat st;
		if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
			free(dir);
			continue;
		}
		v = xreallocarray(v, count + 1, sizeof *v);
		memset(&v[count], 0, sizeof v[count]);
		v[count].name = xstrdup(de->d_name);
		path = record_path(dir);
		if (record_read(path, &v[count].rec, &v[count].error) == 0)
			v[count].ok = 1;
		free(path);
		free(dir);
		count++;
	}
	closedir(d);
	free(sessions);
	if (count > 0)
		qsort(v, count, sizeof *v, entry_cmp);
	*out = v;
	*n = count;
	return 0;
}

/* Free a session list. */
void
session_list_free(struct session_entry *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].error);
		record_free(&v[i].rec);
	}
	free(v);
}

/*
 * Append the CIDs of the pool's VMs (in HOME/pool, not yet anyone's
 * session) to *used, so a new session never takes one of theirs.
 */
void
session_pool_cids(const char *home, unsigned **used, size_t *n)
{
	struct session_record r;
	struct dirent *de;
	char *pool, *path;
	DIR *d;

	xasprintf(&pool, "%s/pool", home);
	if ((d = opendir(pool)) == NULL) {
		free(pool);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		char *why = NULL;
		if (strncmp(de->d_name, "pool-", 5) != 0)
			continue;
		xasprintf(&path, "%s/%s/%s", pool, de->d_name, SESSION_RECORD);
		if (record_read(path, &r, &why) == 0) {
			*used = xreallocarray(*used, *n + 1, sizeof **used);
			(*used)[(*n)++] = r.cid;
			record_free(&r);
		} else
			free(why);
		free(path);
	}
	closedir(d);
	free(pool);
}

/*
 * session_list, and the pool's VMs after the sessions (named by their
 * pool-XXXXXXXX folders): for the checks that must see every disk and
 * image in use, a VM nobody claimed yet included.
 */
int
session_list_all(
    const char *home, struct session_entry **out, size_t *n, char **cause)
{
	struct dirent *de;
	char *pool, *path;
	DIR *d;

	if (session_list(home, out, n, cause) != 0)
		return -1;
	xasprintf(&pool, "%s/pool", home);
	if ((d = opendir(pool)) == NULL) {
		free(pool);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		struct session_entry *e;
		if (strncmp(de->d_name, "pool-", 5) != 0)
			continue;
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		e = &(*out)[(*n)++];
		memset(e, 0, sizeof *e);
		e->name = xstrdup(de->d_name);
		xasprintf(&path, "%s/%s/%s", pool, de->d_name, SESSION_RECORD);
		e->ok = record_read(path, &e->rec, &e->error) == 0;
		free(path);
	}
	closedir(d);
	free(pool);
	return 0;
}

/* Take the home's exclusive lock; returns the fd (close it to unlock). */
int
session_lock(const char *home, char **cause)
{
	char *path;
	int fd;

	xasprintf(&path, "%s/lock", home);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		xasprintf(cause, "cannot open %s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	while (flock(fd, LOCK_EX) != 0) {
		if (errno == EINTR)
			continue;
		xasprintf(cause, "cannot lock %s: %s", path, strerror(errno));
		close(fd);
		free(path);
		return -1;
	}
	free(path);
	return fd;
}
