/*
 * tools-session.c: the session tools (session_create, _list, _status,
 * _stop, _start, _remove) and logs and check.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "oci/oci.h"
#include "session/session.h"
#include "mcp.h"
#include "tools-int.h"

/* ---- sessions ---- */

/*
 * The profile session_create makes a session under, as vmux new would
 * pick it (the one asked, else the settings' default, else "default"),
 * into *prof: what the policy checks (its network, its memory). 0, or -1
 * with *cause.
 */
static int
create_profile(const char *asked, struct profile *prof, char **cause)
{
	struct settings st;
	char *why = NULL;
	int rc;

	memset(&st, 0, sizeof st);
	if (asked == NULL && settings_load(&st, &why) != 0) {
		xasprintf(cause, "settings: %s", why);
		free(why);
		return -1;
	}
	rc = profile_get(asked != NULL ? asked
	        : st.profile != NULL   ? st.profile
	                               : "default",
	    prof, cause);
	settings_free(&st);
	return rc;
}

/*
 * What `vmux new --image` is given for the image an agent names (caller
 * frees; *pull is set to new's --pull), or NULL with *cause. An agent
 * names an image, never a host path vmux would build a root from: a name
 * vmux images lists, an image by reference already pulled (booted with
 * --pull never), or one the server's --allow-image globs match.
 */
static char *
create_image(const struct mcp_policy *p, const char *name, const char **pull,
    char **cause)
{
	cJSON *list = image_list(p->home), *e;
	const cJSON *n, *path;
	struct oci_image img;
	struct oci_ref r;
	char *out = NULL, *why = NULL;
	int got;

	*pull = NULL;
	cJSON_ArrayForEach(e, list)
	{
		n = cJSON_GetObjectItemCaseSensitive(e, "name");
		path = cJSON_GetObjectItemCaseSensitive(e, "path");
		if (cJSON_IsString(n) && cJSON_IsString(path) &&
		    strcmp(n->valuestring, name) == 0) {
			out = xstrdup(path->valuestring);
			break;
		}
	}
	cJSON_Delete(list);
	if (out != NULL)
		return out;
	/* a registry's image only: oci:, docker-archive: and the like
	 * name host files */
	if (oci_ref_parse(name, &r, &why) != 0 || r.transport != OCI_DOCKER ||
	    oci_ref_resolve(&r, &why) != 0) {
		xasprintf(cause,
		    "no guest image named '%.64s' (vmux images lists them), "
		    "nor a registry's image%s%s",
		    name, why ? ": " : "", why ? why : "");
		free(why);
		oci_ref_free(&r);
		return NULL;
	}
	got = oci_cache_find(p->home, r.text, &img, &why);
	oci_image_free(&img);
	free(why);
	if (got == 1)
		*pull = "never";
	else if (!policy_image(p, r.text)) {
		xasprintf(cause,
		    "image %s is not pulled and the server may not pull it "
		    "(vmux mcp --allow-image PATTERN allows it; vmux images "
		    "pull fetches it)",
		    r.text);
		oci_ref_free(&r);
		return NULL;
	}
	xasprintf(&out, "docker://%s", r.text);
	oci_ref_free(&r);
	return out;
}

/*
 * What vmux new says on stderr while it pulls an image (pulling, each
 * layer, bytes, making the ext4): progress notifications of the call.
 */
static void
create_progress(struct mcp_job *j, const char *line, size_t n)
{
	struct mcp_call *c = j->data;
	char *msg;

	if (n < 6 || memcmp(line, "vmux: ", 6) != 0)
		return;
	msg = xstrndup(line + 6, n - 6);
	if (strncmp(msg, "pulling ", 8) == 0 ||
	    strncmp(msg, "layer ", 6) == 0 || strncmp(msg, "pulled ", 7) == 0 ||
	    strncmp(msg, "making an ext4 image", 20) == 0)
		mcp_call_progress(c, msg);
	free(msg);
}

/* A create under way is counted by the policy until its vmux new ends. */
static void
create_done(void *p)
{
	struct mcp_pending *pend = p;

	pend->policy->pending_sessions--;
	pend->policy->pending_memory_mb -= pend->memory_mb;
	free(pend);
}

/* A host mount {"host", "guest", "read_only"} as --mount's value. */
static int
create_mount(
    const struct mcp_policy *p, const cJSON *m, struct argv_b *a, char **cause)
{
	const char *host, *guest;
	char *real;
	int ro;

	if (!cJSON_IsObject(m)) {
		xasprintf(cause,
		    "each of \"mounts\" is {\"host\", \"guest\", "
		    "\"read_only\"}");
		return -1;
	}
	if (arg_str(m, "host", 1, &host, cause) != 0 ||
	    arg_str(m, "guest", 1, &guest, cause) != 0 ||
	    arg_bool(m, "read_only", 1, &ro, cause) != 0 ||
	    policy_host_path(p, host, 0, &real, cause) != 0)
		return -1;
	/* Read-only, always: a guest that could write in a folder the
	 * server's copies use could swap a checked folder for a symlink
	 * between the check and the copy. copy_out is how an agent writes
	 * to the host. */
	if (!ro) {
		free(real);
		xasprintf(cause,
		    "mounts are read-only for an agent "
		    "(\"read_only\": true); write to the host "
		    "with copy_out");
		return -1;
	}
	if (strchr(guest, ':') != NULL || guest[0] != '/') {
		free(real);
		xasprintf(cause,
		    "mount guest path '%s' must be absolute, "
		    "without ':'",
		    guest);
		return -1;
	}
	av_add(a, "--mount");
	av_addf(a, "%s:%s%s", real, guest, ro ? ":ro" : "");
	free(real);
	return 0;
}

/* A name for a session the agent left unnamed, agent-XXXXXXXX, in buf. */
static const char *
agent_name(const char *seed, char *buf, size_t len)
{
	snprintf(buf, len, "agent-%08x",
	    (unsigned)(hash_fnv1a(seed) ^ (uint64_t)wall_time() ^
	        (uint64_t)getpid() ^ mono_ms()));
	return buf;
}

int
t_session_create(struct mcp_call *c, const cJSON *args, char **cause)
{
	struct mcp_policy *p = mcp_call_policy(c);
	const char *name, *profile, *image, *pull = NULL;
	const cJSON *mounts, *m;
	struct profile prof;
	struct mcp_pending *pend;
	long long opt[SOPT_N], mem;
	int net;
	char gen[32], *img = NULL;
	struct argv_b a = {0};

	if (arg_str(args, "name", 0, &name, cause) != 0 ||
	    arg_str(args, "profile", 0, &profile, cause) != 0 ||
	    arg_str(args, "image", 0, &image, cause) != 0 ||
	    arg_options(args, opt, cause) != 0 ||
	    arg_bool(args, "net", 0, &net, cause) != 0)
		return -1;
	mem = opt[SOPT_MEMORY];
	if (name == NULL)
		name = agent_name(p->name, gen, sizeof gen);
	if (session_name_valid(name, cause) != 0)
		return -1;
	if (profile != NULL && p->profile != NULL &&
	    strcmp(profile, p->profile) != 0) {
		xasprintf(cause,
		    "this server makes sessions under profile '%s' only",
		    p->profile);
		return -1;
	}
	if (p->profile != NULL)
		profile = p->profile;
	if (create_profile(profile, &prof, cause) != 0)
		return -1;
	if ((net || prof.net) && p->no_net) {
		xasprintf(cause,
		    "this server's sessions may not have a "
		    "network (vmux mcp --no-net)%s",
		    prof.net ? "; the profile gives one" : "");
		return -1;
	}
	if (mem == 0)
		mem = prof.memory_mb > 0 ? prof.memory_mb
		                         : SESSION_MEMORY_DEFAULT;
	if (policy_may_create(p, mem, cause) != 0)
		return -1;
	if (image != NULL &&
	    (img = create_image(p, image, &pull, cause)) == NULL)
		return -1;
	c->session = xstrdup(name);
	av_add(&a, "vmux");
	av_add(&a, "new");
	av_add(&a, name);
	av_add(&a, "--json");
	av_add(&a, "--label");
	av_addf(&a, "%s=%s", MCP_LABEL_KEY, p->name);
	if (profile != NULL) {
		av_add(&a, "--profile");
		av_add(&a, profile);
	}
	if (img != NULL) {
		av_add(&a, "--image");
		av_add(&a, img);
		free(img);
	}
	if (pull != NULL) {
		av_add(&a, "--pull");
		av_add(&a, pull);
	}
	av_options(&a, opt);
	if (net)
		av_add(&a, "--net");
	if (arg_pairs(args, "labels", "--label", &a, cause) != 0)
		goto bad;
	for (size_t i = 6; i + 1 < a.n; i++) /* past the server's own label */
		if (strcmp(a.v[i], "--label") == 0) {
			char *key =
			    xstrndup(a.v[i + 1], strcspn(a.v[i + 1], "="));
			int ok = policy_label_key(p, key, cause);

			free(key);
			if (ok != 0)
				goto bad;
		}
	mounts = cJSON_GetObjectItemCaseSensitive(args, "mounts");
	if (mounts != NULL && !cJSON_IsNull(mounts) && !cJSON_IsArray(mounts)) {
		xasprintf(cause, "argument \"mounts\" must be a list");
		goto bad;
	}
	cJSON_ArrayForEach(m, mounts)
	{
		if (create_mount(p, m, &a, cause) != 0)
			goto bad;
	}
	if (tool_run(c, &a, NULL, 0, finish_object, cause) != 0)
		return -1;
	c->job->on_err_line = create_progress;
	/* counted until it ends, so that calls at once cannot pass the
	 * limits together */
	pend = xcalloc(1, sizeof *pend);
	pend->policy = p;
	pend->memory_mb = mem;
	p->pending_sessions++;
	p->pending_memory_mb += mem;
	c->scratch = pend;
	c->scratch_free = create_done;
	return 0;
bad:
	av_free(&a);
	return -1;
}

int
t_session_list(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *sel;
	char *s;
	struct argv_b a = {0};

	if (arg_str(args, "selector", 0, &sel, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "ls");
	av_add(&a, "--json");
	if ((s = policy_selector(mcp_call_policy(c), sel)) != NULL) {
		av_add(&a, "-l");
		av_add(&a, s);
		free(s);
	}
	return tool_run(c, &a, NULL, 0, finish_sessions, cause);
}

/* session_status: the one session out of ls --json. */
static void
finish_status(struct mcp_call *c)
{
	char *cause = NULL;
	cJSON *o = call_json(c, &cause), *e;
	const cJSON *n;

	if (o == NULL) {
		mcp_call_fail(c, "%s", cause);
		free(cause);
		return;
	}
	cJSON_ArrayForEach(e, o)
	{
		n = cJSON_GetObjectItemCaseSensitive(e, "name");
		if (cJSON_IsString(n) &&
		    strcmp(n->valuestring, c->session) == 0) {
			cJSON_DetachItemViaPointer(o, e);
			cJSON_Delete(o);
			mcp_call_ok(c, e, NULL);
			return;
		}
	}
	cJSON_Delete(o);
	mcp_call_fail(c, "no session named '%s'", c->session);
}

int
t_session_status(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name;
	char *argv[] = {"vmux", "ls", "--json", NULL};

	if (arg_session(c, args, &name, cause) != 0)
		return -1;
	return mcp_call_run(c, argv, NULL, 0, finish_status, cause);
}

/* session_stop, _start, _remove, _pause, _resume: vmux VERB NAME --json. */
static int
session_verb(
    struct mcp_call *c, const cJSON *args, const char *verb, char **cause)
{
	const char *name;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, verb);
	av_add(&a, name);
	av_add(&a, "--json");
	return tool_run(c, &a, NULL, 0, finish_object, cause);
}

int
t_session_stop(struct mcp_call *c, const cJSON *args, char **cause)
{
	return session_verb(c, args, "stop", cause);
}

int
t_session_start(struct mcp_call *c, const cJSON *args, char **cause)
{
	return session_verb(c, args, "start", cause);
}

int
t_session_remove(struct mcp_call *c, const cJSON *args, char **cause)
{
	return session_verb(c, args, "rm", cause);
}

int
t_session_pause(struct mcp_call *c, const cJSON *args, char **cause)
{
	return session_verb(c, args, "pause", cause);
}

int
t_session_resume(struct mcp_call *c, const cJSON *args, char **cause)
{
	return session_verb(c, args, "resume", cause);
}

/*
 * session_fork: vmux fork SESSION NAME --json. The copy is a new session
 * of this server's (it keeps the parent's labels, vmux.mcp among them), so
 * the server's limits on sessions and memory hold for it.
 */
int
t_session_fork(struct mcp_call *c, const cJSON *args, char **cause)
{
	struct mcp_policy *p = mcp_call_policy(c);
	struct session_record r;
	const char *parent, *name;
	char gen[32];
	struct argv_b a = {0};
	int rc;

	if (arg_session(c, args, &parent, cause) != 0 ||
	    arg_str(args, "name", 0, &name, cause) != 0)
		return -1;
	if (name == NULL)
		name = agent_name(parent, gen, sizeof gen);
	if (session_name_valid(name, cause) != 0 ||
	    record_load(p->home, parent, &r, cause) != 0)
		return -1;
	/* the copy keeps the parent's labels: only the server's own
	 * sessions carry its vmux.mcp, and are counted in its limits */
	if (!policy_owns(p, &r))
		xasprintf(cause,
		    "session %s is not this server's: it can be seen, not "
		    "forked",
		    parent);
	else if (p->no_net && r.net)
		xasprintf(cause,
		    "session %s has a network, which this server's sessions "
		    "may not (vmux mcp --no-net)",
		    parent);
	rc = *cause != NULL ? -1 : policy_may_create(p, r.memory_mb, cause);
	record_free(&r);
	if (rc != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "fork");
	av_add(&a, parent);
	av_add(&a, name);
	av_add(&a, "--json");
	return tool_run(c, &a, NULL, 0, finish_object, cause);
}

/* ---- logs, check ---- */

static void
finish_logs(struct mcp_call *c)
{
	struct mcp_job *j = c->job;
	char *text, *err;
	cJSON *res;

	if (mcp_job_exit_code(j) != 0) {
		err = job_err_line(c);
		mcp_call_fail(c, "%s", err);
		free(err);
		return;
	}
	/* the console's bytes: controls shown, bad UTF-8 replaced */
	text =
	    j->out != NULL ? str_printable(j->out, STR_KEEP_NL) : xstrdup("");
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "session", c->session);
	cJSON_AddStringToObject(res, "text", text);
	mcp_call_ok(c, res, text);
	free(text);
}

int
t_logs(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name;
	long long lines;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_int(args, "lines", 1, 5000, 100, &lines, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "logs");
	av_add(&a, name);
	av_addf(&a, "--lines=%lld", lines);
	return tool_run(c, &a, NULL, 0, finish_logs, cause);
}

/* check's script, in a file of its own until the check ends. */
static void
script_free(void *p)
{
	if (p != NULL)
		unlink(p);
	free(p);
}

static void
finish_check(struct mcp_call *c)
{
	struct mcp_job *j = c->job;
	cJSON *o =
	    j->out != NULL ? cJSON_ParseWithLength(j->out, j->out_len) : NULL;
	cJSON *res;

	/* check's status is that of its scripts: a list is the answer */
	if (!cJSON_IsArray(o)) {
		cJSON_Delete(o);
		finish_wrapped(c, "results"); /* reads the error */
		return;
	}
	res = cJSON_CreateObject();
	cJSON_AddItemToObject(res, "results", o);
	mcp_call_ok(c, res, NULL);
}

int
t_check(struct mcp_call *c, const cJSON *args, char **cause)
{
	const struct mcp_policy *p = mcp_call_policy(c);
	const char *script, *sel;
	long long timeout;
	char *path, *s;
	int fd;
	struct argv_b a = {0};

	if (arg_str(args, "script", 1, &script, cause) != 0 ||
	    arg_str(args, "selector", 0, &sel, cause) != 0 ||
	    arg_int(args, "timeout_s", 1, 3600, 300, &timeout, cause) != 0)
		return -1;
	xasprintf(&path, "%s/mcp-check-XXXXXX", p->home);
	if ((fd = mkstemp(path)) < 0 ||
	    write_all(fd, script, strlen(script)) < 0) {
		xasprintf(cause, "writing the script: %s", strerror(errno));
		if (fd >= 0)
			close(fd), unlink(path);
		free(path);
		return -1;
	}
	close(fd);
	c->scratch = path;
	c->scratch_free = script_free;
	av_add(&a, "vmux");
	av_add(&a, "check");
	av_add(&a, path);
	av_add(&a, "--json");
	av_addf(&a, "--timeout=%lld", timeout);
	if ((s = policy_selector(p, sel)) != NULL) {
		av_add(&a, "-l");
		av_add(&a, s);
		free(s);
	} else
		av_add(&a, "*");
	return tool_run(c, &a, NULL, 0, finish_check, cause);
}
