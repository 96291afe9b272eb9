/*
 * cmd-new.c: `vmux new NAME`: boot a session; return once its agent answers.
 *
 * Flags are checked before anything is created (bad flags exit 2 and leave
 * nothing); session_launch() does the rest and cleans up after itself.
 * SIGINT/SIGTERM/SIGHUP during the boot abort it cleanly instead of leaving
 * a half-made session.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/qemu.h"
#include "oci/oci.h"
#include "session/session.h"
#include "cli.h"

#define NEW_BOOT_DEFAULT 60

static int cmd_new_exec(struct args *);

static const struct cmd_opt cmd_new_common[] = {
    NEW_OPTS,
    {NULL, 0, NULL, 0, NULL},
};
static const struct cmd_opt cmd_new_own[] = {
    {"count", 0, "N", 0,
        "make N sessions at once, PREFIX1 to PREFIXN (with --prefix), a "
        "progress line each"},
    {"prefix", 0, "PREFIX", 0, "the names --count makes"},
    {"roster", 0, "FILE", 0,
        "make a session for each name in FILE (one a line; # comments)"},
    {"json", 0, NULL, 0,
        "print the session as JSON (as ls --json shows it) instead of "
        "its name"},
    {"foreground", 0, NULL, 0,
        "stay while the VM runs; SIGTERM, SIGINT or SIGHUP powers it off "
        "cleanly (as vmux stop) and ends vmux; SIGUSR2 (a 'time "
        "limit') pauses it instead: a batch job's body (vmux -H CLUSTER new "
        "runs it)"},
    {NULL, 0, NULL, 0, NULL},
};

/* NEW_OPTS, the session options, new's own (cmd_new_init). */
static struct cmd_opt cmd_new_opts[NEW_OPTS_MAX];

/*
 * The options of new (and run): common, then the session options' flags
 * (the table's SOPT_NEW rows), then own; NULL-terminated into out, which
 * has NEW_OPTS_MAX entries.
 */
void
new_opts_build(struct cmd_opt *out, const struct cmd_opt *common,
    const struct cmd_opt *own)
{
	size_t n = 0;

	for (; common->name != NULL; common++)
		out[n++] = *common;
	for (int i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		if (so->flags & SOPT_NEW)
			out[n++] =
			    (struct cmd_opt){so->flag, 0, so->arg, 0, so->help};
	}
	for (; own->name != NULL; own++)
		out[n++] = *own;
	if (n >= NEW_OPTS_MAX)
		NEVER("new_opts_build: NEW_OPTS_MAX is too small");
	out[n] = (struct cmd_opt){NULL, 0, NULL, 0, NULL};
}

/* Before main: new's options, built from the table. */
__attribute__((constructor)) static void
cmd_new_init(void)
{
	new_opts_build(cmd_new_opts, cmd_new_common, cmd_new_own);
}

const struct cmd_entry cmd_new_entry = {
    .name = "new",
    .pre = "NAME | --count N --prefix P | --roster FILE",
    .summary = "Boot a new microVM session called NAME with its own "
               "workspace disk, mounted at /workspace (the home and working "
               "directory of commands and shells). Returns once the guest "
               "agent answers, printing the name; on failure nothing is "
               "left behind (exit status 125).",
    .flags = CMD_CREATES | CMD_BOOTS,
    .opts = cmd_new_opts,
    .min_args = 0,
    .max_args = 1,
    .exec = cmd_new_exec,
};

static volatile int new_interrupted;

/* Signal handler: ask the boot loop to give up and clean up. */
static void
new_signal(int sig)
{
	new_interrupted = sig; /* 128 + it is the exit status */
}

/* Print a launch notice (e.g. the TCG fallback) on stderr. */
static void
new_notice(const char *msg)
{
	cli_notice(msg);
}

/* The host's online CPUs and RAM in MiB, the ceilings of --cpus, --memory. */
static void
host_limits(long *cpus, long long *mem_mb)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	*cpus = n > 0 ? n : 1;
	*mem_mb =
	    pages > 0 && size > 0 ? (long long)pages * size >> 20 : 1048576;
}

/*
 * Apply the flags of the session options (the table's SOPT_NEW rows) over
 * profile p and into o: each parsed as its row says; one a profile sets
 * goes into p, refused when p locks it to another value; the others into
 * o. 0, or -1 with cause naming the flag (and the field and the profile).
 */
/*
 * The text new's flag for row so was given ("on" for a flag without a
 * value), or NULL when it was not. new and run read their flags with it.
 */
const char *
new_option_text(struct args *a, const struct session_option *so)
{
	if (so->arg == NULL)
		return args_has(a, so->flag) ? "on" : NULL;
	return args_get(a, so->flag);
}

static int
new_options(
    struct args *a, struct profile *p, struct launch_opts *o, char **cause)
{
	for (int i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		const char *v;
		long long n, was;
		char *what;
		int rc;

		if (!(so->flags & SOPT_NEW))
			continue;
		if ((v = new_option_text(a, so)) == NULL)
			continue;
		xasprintf(&what, "--%s", so->flag);
		rc = option_parse(so, what, v, &n, cause);
		free(what);
		if (rc != 0)
			return -1;
		if (so->type == SOPT_HOSTNAME_TEXT) {
			*option_str(o, so->opts_off) = (char *)v;
			continue;
		}
		if (!(so->flags & SOPT_PROFILE)) {
			option_set(o, so->opts_off, so->opts_size, n);
			continue;
		}
		/* A locked field may be given its own value, never another. */
		was = option_get(p, so->prof_off, so->prof_size);
		if (profile_locked(p, i) && n != was) {
			xasprintf(cause, "--%s: '%s' is locked by profile '%s'",
			    so->flag, so->flag, p->name);
			return -1;
		}
		option_set(p, so->prof_off, so->prof_size, n);
	}
	return 0;
}

/* The settings and the profile: --profile, else the settings', else
 * default (slurm.c sizes a job by it too). */
int
new_defaults(
    struct args *a, struct profile *p, struct settings *st, char **cause)
{
	const char *s = args_get(a, "profile");

	if (settings_load(st, cause) != 0)
		return -1;
	if (s == NULL)
		s = st->profile != NULL ? st->profile : "default";
	if (profile_get(s, p, cause) != 0) {
		settings_free(st);
		return -1;
	}
	return 0;
}

/* Free the mounts new_parse made. */
void
new_mounts_free(struct session_mount *m, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		mount_free(&m[i]);
	free(m);
}

/* Check every --mount against the allowed roots and the profile. */
static int
new_mounts(struct args *a, const struct profile *p, const struct settings *st,
    struct launch_opts *o, struct session_mount **out, char **cause)
{
	char **specs;
	int n, i;

	specs = args_values(a, "mount", &n);
	if (n == 0)
		return 0;
	*out = xcalloc((size_t)n, sizeof **out);
	for (i = 0; i < n; i++) {
		if (mount_check(specs[i], st->roots, st->nroots, p->mounts,
		        p->name, &(*out)[i], cause) != 0) {
			new_mounts_free(*out, (size_t)i);
			*out = NULL;
			return -1;
		}
	}
	o->mounts = *out;
	o->nmounts = (size_t)n;
	return 0;
}

/*
 * Fill o and p from new's flags over the chosen profile (shared with vmux
 * run, whose table has them too; o->name is set by the caller). *allow is
 * the --allow-port list (caller frees, also on failure). 0, or -1 with a
 * usage cause.
 */
int
new_parse(struct args *a, struct launch_opts *o, struct profile *p,
    unsigned **allow, struct session_mount **mounts, char **cause)
{
	struct settings settings;
	const char *s;
	char **ports;
	long host_cpus;
	long long host_mb, v;
	int i, nports;

	*allow = NULL;
	*mounts = NULL;
	if (new_defaults(a, p, &settings, cause) != 0)
		return -1;
	if (new_mounts(a, p, &settings, o, mounts, cause) != 0) {
		settings_free(&settings);
		return -1;
	}
	settings_free(&settings);
	if (new_options(a, p, o, cause) != 0)
		return -1;
	if (args_get(a, "disk") != NULL && args_get(a, "workspace") != NULL) {
		xasprintf(cause,
		    "--disk and --workspace exclude each other (an "
		    "existing image has its size)");
		return -1;
	}
	{
		char **hosts = args_values(a, "allow-host", &nports), **pub;
		int npub;
		pub = args_values(a, "publish", &npub);
		for (i = 0; i < nports; i++) {
			if (net_allow_check(hosts[i], cause) != 0)
				return -1;
		}
		for (i = 0; i < npub; i++) {
			if (net_publish_check(pub[i], cause) != 0)
				return -1;
		}
		/* A NIC of any kind is a change to a network locked off. */
		if ((nports > 0 || npub > 0) && !p->net &&
		    profile_locked(p, SOPT_NET)) {
			xasprintf(cause, "%s: 'net' is locked by profile '%s'",
			    nports > 0 ? "--allow-host" : "--publish", p->name);
			return -1;
		}
		o->allow_hosts = hosts;
		o->nallow_hosts = (size_t)nports;
		o->publish = pub;
		o->npublish = (size_t)npub;
	}
	{
		int nlabels;
		char **labels = args_values(a, "label", &nlabels);
		if (labels_valid(labels, (size_t)nlabels, cause) != 0)
			return -1;
		o->labels = labels;
		o->nlabels = (size_t)nlabels;
	}
	/* An image of one's own is a disk too: no larger than a lock allows. */
	if ((s = args_get(a, "workspace")) != NULL &&
	    profile_locked(p, SOPT_DISK)) {
		struct stat st;

		if (stat(s, &st) == 0 &&
		    st.st_size > (off_t)p->disk_mb * 1024 * 1024) {
			xasprintf(cause,
			    "--workspace %s: 'disk' is locked by profile '%s' "
			    "to %lld MiB; this image is %lld MiB",
			    s, p->name, (long long)p->disk_mb,
			    (long long)(st.st_size / (1024 * 1024)));
			return -1;
		}
	}
	host_limits(&host_cpus, &host_mb);
	if (p->cpus > host_cpus) {
		xasprintf(cause, "--cpus %d: this host has %ld CPUs", p->cpus,
		    host_cpus);
		return -1;
	}
	if (p->memory_mb > host_mb) {
		xasprintf(cause, "--memory %d: this host has %lld MiB",
		    p->memory_mb, host_mb);
		return -1;
	}
	o->profile = p;
	o->cpus = p->cpus;
	o->memory_mb = p->memory_mb;
	o->disk_mb = p->disk_mb;
	o->boot_timeout_s = NEW_BOOT_DEFAULT;
	if ((s = args_get(a, "boot-timeout")) != NULL) {
		if (option_number("--boot-timeout", s, 1, 3600, &v, cause) != 0)
			return -1;
		o->boot_timeout_s = (int)v;
	}
	s = args_get(a, "accel");
	if (s != NULL && strcmp(s, "kvm") != 0 && strcmp(s, "tcg") != 0) {
		xasprintf(cause, "invalid --accel '%s': want kvm or tcg", s);
		return -1;
	}
	o->accel = s;
	s = args_get(a, "vsock");
	if (s != NULL && strcmp(s, "kernel") != 0 && strcmp(s, "bridge") != 0) {
		xasprintf(
		    cause, "invalid --vsock '%s': want bridge or kernel", s);
		return -1;
	}
	o->vsock_kernel = s != NULL && strcmp(s, "kernel") == 0;
	ports = args_values(a, "allow-port", &nports);
	if (nports > 0 && o->vsock_kernel) {
		xasprintf(cause, "--allow-port needs --vsock bridge");
		return -1;
	}
	*allow = xcalloc((size_t)nports + 1, sizeof **allow);
	for (i = 0; i < nports; i++) {
		if (option_number("--allow-port", ports[i], 1, 0xffffffffLL, &v,
		        cause) != 0)
			return -1;
		(*allow)[i] = (unsigned)v;
	}
	o->allow_ports = *allow;
	o->nallow_ports = (size_t)nports;
	o->workspace = args_get(a, "workspace");
	o->image = args_get(a, "image");
	if (o->image == NULL && p->image[0] != '\0')
		o->image = p->image; /* the profile's */
	if (args_get(a, "pull") != NULL) {
		enum oci_pull_policy pp;

		if (oci_pull_policy_parse(args_get(a, "pull"), &pp, cause) != 0)
			return -1;
		o->pull_policy = (int)pp;
	}
	o->kernel = args_get(a, "kernel");
	o->initrd = args_get(a, "initrd");
	o->append = args_get(a, "append");
	if (o->append != NULL && qemu_append_valid(o->append, cause) != 0)
		return -1;
	o->persist_append = args_has(a, "persist");
	if (o->persist_append && o->append == NULL) {
		xasprintf(cause, "--persist keeps --append, which is missing");
		return -1;
	}
	o->no_agent = args_has(a, "no-agent");
	o->cold = args_has(a, "cold");
	o->record = args_has(a, "record") || args_has(a, "record-input");
	o->record_input = args_has(a, "record-input");
	o->gdb = args_has(a, "gdb");
	o->paused = args_has(a, "paused");
	if (o->paused && !o->gdb) {
		xasprintf(cause, "--paused waits for gdb: add --gdb");
		return -1;
	}
	return 0;
}

/*
 * With a pool (settings: pool SIZE) and a request it can meet, claim a
 * ready VM for a->argv[0] into *r: 1 claimed, 0 not (boot as usual), -1
 * with cause. Either way the pool refills behind us.
 */
static int
new_from_pool(
    struct args *a, const char *home, struct session_record *r, char **cause)
{
	struct settings st;
	int rc;

	if (settings_load(&st, cause) != 0)
		return -1;
	if (!pool_eligible(a, &st)) {
		settings_free(&st);
		return 0;
	}
	rc = pool_claim(home, &st, a, a->argv[0], r, cause);
	settings_free(&st);
	pool_refill_later(home);
	return rc < 0 ? -1 : rc == 0 ? 1 : 0;
}

/* Boot the session. */
static int
cmd_new_exec(struct args *a)
{
	struct launch_opts o;
	struct session_record r;
	struct profile p;
	struct session_mount *mounts = NULL;
	char *cause = NULL, *home;
	unsigned *allow = NULL;
	int rc, claimed;

	memset(&o, 0, sizeof o);
	if (args_get(a, "count") != NULL || args_get(a, "roster") != NULL) {
		/* a class: the flags are checked here once, for all */
		if (a->argc > 0) {
			cause = xstrdup("NAME, or --count/--roster, not both");
			goto usage;
		}
		if (args_has(a, "foreground")) {
			cause = xstrdup("--foreground keeps one session: not "
			                "with --count/--roster");
			goto usage;
		}
		if (args_get(a, "hostname") != NULL) {
			cause =
			    xstrdup("--hostname names one guest: not with "
			            "--count/--roster (each takes its name)");
			goto usage;
		}
		if (new_parse(a, &o, &p, &allow, &mounts, &cause) != 0)
			goto usage;
		free(allow);
		new_mounts_free(mounts, o.nmounts);
		return new_class(a);
	}
	if (a->argc != 1) {
		cause = xstrdup(a->argc == 0 ? "missing NAME" : "one NAME");
		goto usage;
	}
	o.name = a->argv[0];
	if (session_name_valid(o.name, &cause) != 0 ||
	    new_parse(a, &o, &p, &allow, &mounts, &cause) != 0)
		goto usage;

	home = cli_home();
	if (home == NULL) {
		free(allow);
		new_mounts_free(mounts, o.nmounts);
		return EXIT_VMUX;
	}
	o.home = home;
	o.notice = new_notice;
	o.pull_progress = cli_pull_progress;
	o.pull_arg = &o; /* lines on stderr, even with --json */
	o.interrupted = &new_interrupted;
	cli_trap_interrupts(new_signal);
	if (args_has(a, "foreground"))
		session_foreground_early();
	transport_cancel_on(&new_interrupted);

	claimed = new_from_pool(a, home, &r, &cause);
	if (claimed < 0) {
		cli_error("%s", cause);
		free(cause);
		rc = EXIT_VMUX;
	} else if (claimed == 0 && session_launch(&o, &r, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		rc = new_interrupted ? 128 + new_interrupted : EXIT_VMUX;
	} else if (new_interrupted) {
		/* booted just as the signal came: undo it, as asked */
		record_free(&r);
		if (session_remove(home, a->argv[0], 1, 0, NULL, &cause) != 0)
			free(cause);
		cli_error("interrupted: session '%s' not created", a->argv[0]);
		rc = 128 + new_interrupted;
	} else {
		struct session_entry e = {.name = r.name, .ok = 1, .rec = r};
		if (cli_json())
			cli_result(ls_session_json(&e));
		else
			printf("%s\n", r.name);
		record_free(&r);
		rc = args_has(a, "foreground")
		    ? session_foreground(home, a->argv[0], new_interrupted)
		    : 0;
	}
	free(home);
	free(allow);
	new_mounts_free(mounts, o.nmounts);
	return rc;
usage:
	rc = cli_usage_error(a->entry, "%s", cause);
	free(cause);
	free(allow);
	new_mounts_free(mounts, o.nmounts);
	return rc;
}
