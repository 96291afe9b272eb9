/*
 * session.h: the host side of vmux sessions.
 *
 * A session is one QEMU microVM plus its vsock bridge, described by a record
 * (session.json) in its own state directory under the vmux home. This header
 * covers: the session options, one table of every setting (options.c),
 * state paths and names (paths.c), records and CID allocation (record.c),
 * detached processes and their exit records (proc.c), the per-session lock
 * (lock.c), workspace disks (workspace.c), the bounded console log (logcap.c),
 * profiles (profile.c), network (net.c), host mounts (mounts.c, fs.c), settings
 * (settings.c), the error ring (errors.c), guest images (image.c), launching
 * and starting again (launch.c) with the reaper's watcher (ttl, idle timeout, a
 * dead bridge, the console's bound), states, stopping and removing (stop.c),
 * the client transport to a guest vsock port (transport.c), the agent's JSON
 * request/reply client and its requests, each built in one place
 * (agent_client.c), and its streams that follow a first JSON line: attached
 * shells and archives (attach.c). QEMU command lines come from qemu.h; the
 * bridge itself is a separate program (session/bridge/, vmux-bridge).
 *
 * Conventions: user-facing errors as `char **cause` (caller frees); times
 * given as deadlines on the mono_ms() clock.
 */
#ifndef VMUX_SESSION_H
#define VMUX_SESSION_H

#include <sys/stat.h>
#include <sys/types.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define SESSION_NAME_MAX  64
#define SESSION_CID_FIRST 3
#define SESSION_RECORD    "session.json"
#define SESSION_VERSION   1
/* In the home: the host TSC rate, "BOOT_ID KHZ" (accel.c) */
#define SESSION_TSC_CACHE "tsc-khz"

/* File names inside a session directory (or its socket directory). */
#define SESSION_VSOCK_SOCK   "vsock.sock"
#define SESSION_VHOST_SOCK   "vhost-user.sock"
#define SESSION_QMP_SOCK     "qmp.sock"
#define SESSION_CONSOLE      "console.log"
#define SESSION_CONSOLE_SOCK "console.sock" /* readers (vmux console) */
#define SESSION_SERIAL_SOCK  "serial"       /* FIFOs serial.in, serial.out */
#define SESSION_GDB_SOCK     "gdb.sock"     /* QEMU's gdbstub (--gdb) */
#define SESSION_CONSOLE_EXIT "console.exit" /* how the keeper ended */
#define SESSION_QEMU_LOG     "qemu.log"
#define SESSION_BRIDGE_LOG   "bridge.log"
#define SESSION_WORKSPACE    "workspace.img" /* the workspace vmux made */
#define SESSION_EXIT         "qemu.exit"     /* how QEMU last ended (reaper) */
#define SESSION_BRIDGE_EXIT  "bridge.exit"   /* how the bridge last ended */
#define SESSION_LOCK         "lock"          /* per-session flock */
#define SESSION_STATE        "state.vmstate" /* a paused session's devices */
#define SESSION_RAM_SAVED    "memory.ram"    /* ... and its RAM (sparse) */
#define SESSION_ROOT_OVERLAY "root.qcow2"    /* --image: this boot's writes */

/* Workspace sizes (MiB): the default, and the bounds --disk accepts. */
#define WORKSPACE_DEFAULT_MB 4096
#define WORKSPACE_MIN_MB     16
#define WORKSPACE_MAX_MB     (16 * 1024 * 1024)

/* Binary names found beside the vmux executable or in PATH. */
#define SESSION_QEMU_DEFAULT "qemu-system-x86_64" /* Debian's */
#define SESSION_QEMU_OWN     "vmux-qemu"          /* vmux's (qemu/build) */
#define SESSION_BRIDGE_NAME  "vmux-bridge"
#define SESSION_KERNEL_NAME  "vmlinux"
#define SESSION_INITRD_NAME  "initrd.img"

/* Smallest guest memory that boots the default image with a workspace. */
#define SESSION_MEMORY_MIN 96
/* A session's memory when neither a flag nor a profile says (MiB). */
#define SESSION_MEMORY_DEFAULT 512

/*
 * options.c: the session options, one row per setting a session is made
 * with (vmux new's flags, profile keys, record and ls --json fields). The
 * rows are indexed by enum session_option_id.
 */
enum session_option_id {
	SOPT_CPUS,
	SOPT_MEMORY,
	SOPT_PIDS,
	SOPT_DISK,
	SOPT_QUOTA,
	SOPT_NET,
	SOPT_READ_ONLY,
	SOPT_MOUNTS,
	SOPT_MAX_TIMEOUT,
	SOPT_TTL,
	SOPT_IDLE,
	SOPT_HOSTNAME,
	SOPT_NOFILE,
	SOPT_TB_SIZE,
	SOPT_IDLE_PAUSE,
	SOPT_N
};
enum session_option_type {
	SOPT_NUMBER,   /* a whole number in [min, max] */
	SOPT_SIZE,     /* MiB, with an optional unit (512M, 4G) */
	SOPT_DURATION, /* seconds, with an optional unit (90, 30m, 8h, 2d) */
	SOPT_BOOL,     /* on/off; a flag without a value */
	SOPT_CHOICE,   /* one of choices, kept as its index */
	SOPT_HOSTNAME_TEXT /* text: a host name of at most max bytes */
};
#define SOPT_NEW     0x1  /* a vmux new (and run) flag */
#define SOPT_PROFILE 0x2  /* a profile sets it, and may lock it */
#define SOPT_POOL    0x4  /* a warm pool's VM can be given it when claimed */
#define SOPT_LS      0x8  /* ls --json shows it under its key */
#define SOPT_ONOFF   0x10 /* JSON says "on"/"off", not true/false */
#define SOPT_FIXED   0x20 /* run --name: a different value is a conflict */
#define SOPT_MCP     0x40 /* MCP's session_create takes it (its key) */
#define SOPT_NOWHERE ((size_t)-1)
struct session_option {
	const char *flag; /* --FLAG, and its key in a profile file */
	const char *arg;  /* the value's name in --help; NULL: none */
	const char *help;
	enum session_option_type type;
	long long min, max;  /* bounds, in unit (a host name: its length) */
	const char *unit;    /* "MiB", "s", or NULL */
	const char *key;     /* session.json, ls --json, profile JSON */
	const char *old_key; /* what older records called it, or NULL */
	size_t rec_off, rec_size;   /* in struct session_record */
	size_t prof_off, prof_size; /* in struct profile */
	size_t opts_off, opts_size; /* in struct launch_opts */
	unsigned flags;             /* SOPT_* */
	const char *const *choices; /* SOPT_CHOICE's names */
	const char *guest; /* its kernel command-line word for the guest
	                      (vmux-init), given when not 0; or NULL */
};
/*
 * Where a setting kept by its row alone lives, in struct session_record,
 * struct profile and struct launch_opts: a new setting needs no field of
 * its own in each (SOPT_VALUE(SOPT_NOFILE) is its row's offset and size).
 */
#define SOPT_VALUES long long sopt[SOPT_N]
extern const struct session_option session_options[SOPT_N];
const struct session_option *session_option_find(const char *flag);
int option_parse(const struct session_option *, const char *what,
    const char *text, long long *num, char **cause);
int option_number(const char *what, const char *s, long long min, long long max,
    long long *out, char **cause);
int option_size_mb(const char *what, const char *s, long long min_mb,
    long long max_mb, long long *out, char **cause);
int option_size_bytes(const char *what, const char *s, long long min,
    long long max, long long *out, char **cause);
int option_duration(
    const char *what, const char *s, long long *out, char **cause);
long long option_get(const void *base, size_t off, size_t size);
void option_set(void *base, size_t off, size_t size, long long v);
char **option_str(void *base, size_t off);
struct session_record;
cJSON *option_to_json(
    const struct session_option *, const struct session_record *);
cJSON *option_value_json(const struct session_option *, long long);
int option_from_json(const struct session_option *, const cJSON *,
    struct session_record *, char **cause);

/* profile.c: a profile sets the session options flagged SOPT_PROFILE (and
 * may lock them: 1 << enum session_option_id). */
enum { MOUNTS_NONE, MOUNTS_RO, MOUNTS_RW };

struct profile {
	char name[SESSION_NAME_MAX + 1];
	int net;            /* outbound network */
	int read_only_root; /* the guest's / is read-only */
	int mounts;         /* host mounts allowed: MOUNTS_* */
	int cpus, memory_mb;
	int pids_limit;    /* processes the user's commands may have */
	int64_t disk_mb;   /* size of a new workspace */
	int64_t quota_mb;  /* workspace quota (0: the disk's size) */
	int max_timeout_s; /* longest exec timeout; longer is clamped */
	unsigned locked;   /* 1 << enum session_option_id */
	SOPT_VALUES;       /* the rows kept by the table alone */
	char image[256];   /* "image REF": new's --image when none is given */
};

int profile_get(const char *name, struct profile *out, char **cause);
int profile_locked(const struct profile *, int field);
const char *const *profile_builtin_names(void);
cJSON *profile_json(const struct profile *);

/* input.c: what a client sends a shell, checked alike for every surface */
#define KEY_BYTES_MAX 16
int key_bytes(const char *word, char *out);
char *keys_input(char *const *words, size_t n, int literal, size_t *len);
int shell_id_valid(const char *id, char **cause);
const char *shell_signal_name(const char *s, char **cause);

/* paths.c */
int session_name_valid(const char *name, char **cause);
char *session_home(char **cause);
int session_home_create(const char *home, char **cause);
char *session_dir(const char *home, const char *name);
char *session_sock_dir(const char *dir, char **cause);
char *exe_path(void);
char *exe_dir(void);
char *find_in_path(const char *name);
char *find_program(const char *name, const char *env, char **cause);
char *session_qemu_find(int use_env);
char *session_ram_path(const char *dir);
int session_qemu_is_own(const char *path);
const char *session_qemu_why_no_state(const char *path);
int guest_image_find(const char *kernel, const char *initrd, char **kernel_out,
    char **initrd_out, char **cause);
int guest_image_default(char **kernel_out, char **initrd_out, char **cause);
int session_env_other(const char *var);
char *file_identity(const char *path);
char *session_boot_identity(const char **missing);
uint64_t hash_fnv1a(const char *);

/* record.c */
enum session_status {
	SESSION_STARTING, /* booting: the agent has not answered yet */
	SESSION_READY,    /* booted; the agent answered a ping */
	SESSION_STOPPING, /* vmux stop (or a timer) is powering it off */
	SESSION_STOPPED,  /* powered off on purpose; the workspace stays */
	SESSION_PAUSED,   /* its state is in files (pause.c); no process */
};

/* A host folder shared into the guest (mounts.c). */
struct session_mount {
	char *host;  /* resolved host directory */
	char *guest; /* where the guest mounts it */
	int ro;      /* read-only (enforced on the host) */
	pid_t pid;   /* its virtiofsd, 0 when not running */
};

struct session_record {
	char *name;
	char *dir;        /* the session's state directory */
	int status;       /* enum session_status */
	char *accel;      /* "tcg" or "kvm" */
	unsigned cid;     /* guest CID, >= 3 */
	int vsock_kernel; /* 1: kernel vhost-vsock, 0: vmux-bridge */
	char *vsock_uds;  /* bridge hybrid-vsock socket (NULL when kernel) */
	char *vhost_user; /* bridge vhost-user socket (NULL when kernel) */
	char *qmp;        /* QMP socket */
	char *sock_dir;   /* socket directory when not dir itself, else NULL */
	char *ram_file;   /* the guest's RAM (a tmpfs file), or NULL: a memfd */
	char *console_log;  /* guest serial console */
	char *console_sock; /* its keeper's readers' socket (console.c) */
	char *qemu_log;     /* QEMU's stdout and stderr */
	char *bridge_log;   /* the bridge's stdout and stderr */
	char *qemu_bin, *bridge_bin, *kernel, *initrd;
	pid_t qemu_pid, bridge_pid; /* 0 when not (yet) started */
	pid_t console_pid;          /* the console keeper; 0: none */
	int record;         /* --record: shells recorded (vmux record) */
	int record_input;   /* --record-input: their input too */
	pid_t recorder_pid; /* that recorder; 0: none */
	int no_agent;       /* this boot is --no-agent: use the console */
	char *append;       /* kept kernel command line words */
	char *rescue_disk;  /* vmux rescue: the disk at /sysroot, or NULL */
	int rescue_rw;      /* ... attached writable */
	int64_t created;    /* seconds since the epoch */
	char *instance;     /* random, made with the session (and at a pool
	                       claim): what a grant is pinned to; NULL in a
	                       record older than it */
	int instance_late;  /* the instance came after (a grant on an older
	                       record): its --if-created grants still hold */
	int cpus, memory_mb;
	unsigned *allow_ports;
	size_t nallow_ports;
	char *workspace;     /* the workspace disk image; NULL: none */
	int workspace_owned; /* vmux made it: vmux rm deletes it */
	int64_t started;     /* last boot began (seconds since the epoch) */
	int64_t stopped;     /* last stop ended, 0 if never */
	char *stop_reason;   /* who stopped it: "user", "ttl", ...; or NULL */
	char *profile;       /* the profile it was made under */
	char *root_image;    /* --image: an ext4 image for /, or NULL */
	char *image_ref;     /* --image by reference: its text, or NULL */
	char *image_digest;  /* and its manifest's digest */
	char **allow_hosts;  /* --allow-host HOST:PORT values */
	size_t nallow_hosts;
	char **publish; /* --publish HOSTPORT:GUESTPORT values */
	size_t npublish;
	char **labels; /* KEY=VALUE (labels.c), keys unique */
	size_t nlabels;
	struct session_mount *mounts; /* --mount folders */
	size_t nmounts;
	int64_t quota_mb; /* on the writable mounts' bytes; 0: none */
	int net;          /* outbound network (NIC) */
	int read_only_root;
	int mounts_mode;   /* host mounts allowed: MOUNTS_* */
	int pids_limit;    /* limit on the user's processes; 0: none */
	int max_timeout_s; /* exec timeouts are clamped to this; 0: none */
	int64_t ttl_s;     /* stop this long after boot; 0: never */
	int64_t idle_s;    /* stop after this long idle; 0: never */
	char *hostname;    /* the guest's host name; NULL: the name */
	int64_t paused;    /* when it was paused (seconds since the epoch) */
	char *state_key;   /* what the paused state needs (pause.c) */
	char *state_sum;   /* and what its files hold: their check */
	char *parent;      /* vmux fork: the session it was copied from */
	SOPT_VALUES;       /* the rows kept by the table alone */
};

/* vmux's settings ($XDG_CONFIG_HOME/vmux/config, settings.c). */
struct settings {
	char **roots; /* allowed-mount-root, resolved */
	size_t nroots;
	char *profile;        /* default profile, or NULL */
	int64_t console_max;  /* console-log-max in bytes, or 0: default */
	int64_t image_max;    /* image-max in bytes, or 0: default */
	int64_t idle_pause_s; /* idle-pause: every session's, or 0: never */
	int pool_size;        /* pool SIZE [profile P] [image I]: warm VMs */
	char *pool_profile, *pool_image; /* NULL: new's defaults */
	struct settings_host {
		char *name, *url; /* host NAME URL (host.c) */
	} * hosts;
	size_t nhosts;
	char *default_host; /* default-host NAME, or NULL: this machine */
};

/* How QEMU last ended, as its reaper wrote it. */
/* The longest cause the reaper records for a program it ended. */
#define PROC_CAUSE_MAX 128

struct session_exit {
	int known;                  /* the reaper left a record */
	int code;                   /* exit status when !signal */
	int signal;                 /* terminating signal, or 0 */
	int64_t when;               /* seconds since the epoch */
	char cause[PROC_CAUSE_MAX]; /* who ended it when vmux did, or "" */
};

struct session_entry {
	char *name;
	int ok;      /* record read fine */
	char *error; /* why not, when !ok */
	struct session_record rec;
};

void record_free(struct session_record *);
cJSON *record_to_json(const struct session_record *);
/* The views of a record's plain fields (record_strs_json). */
#define RECORD_VIEW_FILE 0x1 /* session.json */
#define RECORD_VIEW_LS   0x2 /* ls --json (and new --json) */
void record_strs_json(cJSON *, const struct session_record *, unsigned view);
int record_from_json(const cJSON *, struct session_record *, char **cause);
char *record_path(const char *dir);
int record_write(const char *path, const struct session_record *, char **cause);
int record_read(const char *path, struct session_record *, char **cause);
int record_save(const struct session_record *, char **cause);
char *record_instance_new(void);
int record_instance_get(
    const char *home, const char *name, char **out, char **cause);
int record_load(
    const char *home, const char *name, struct session_record *, char **cause);
unsigned cid_pick(const unsigned *used, size_t n);
int session_list(
    const char *home, struct session_entry **out, size_t *n, char **cause);
void session_list_free(struct session_entry *, size_t);
int session_lock(const char *home, char **cause);
void session_pool_cids(const char *home, unsigned **used, size_t *n);
int session_list_all(
    const char *home, struct session_entry **out, size_t *n, char **cause);

/* lock.c */
int session_lock_one(const char *dir, const char *what, int wait_ms,
    void (*notice)(const char *), char **cause);
void session_unlock(int fd);
int session_lock_record(const char *home, const char *name, const char *what,
    int wait_ms, void (*notice)(const char *), struct session_record *,
    char **cause);

/* labels.c: labels (KEY=VALUE) and selectors (kubectl's -l syntax) */
#define LABEL_PART_MAX 63 /* characters in a key, and in a value */
enum selector_op { SEL_EQ, SEL_NE, SEL_SET, SEL_UNSET };
struct selector {
	struct selector_term {
		char *key, *value; /* value: NULL for SEL_SET, SEL_UNSET */
		int op;            /* enum selector_op */
	} * terms;
	size_t n;
};
int label_valid(const char *kv, char **cause);
int label_key_valid(const char *key);
int labels_valid(char *const *labels, size_t n, char **cause);
const char *label_get(char *const *labels, size_t n, const char *key);
int selector_parse(const char *, struct selector *, char **cause);
int selector_match(const struct selector *, char *const *labels, size_t n);
void selector_free(struct selector *);
int name_is_glob(const char *name);

/* check.c */
cJSON *session_check_read(const char *dir);
int name_glob_match(const char *pattern, const char *name);

/* errors.c */
#define ERRORS_KEEP 50

void errors_append(const char *home, const char *session, const char *command,
    const char *message);
cJSON *errors_read(const char *home);

/* settings.c */
char *settings_path(void);
int settings_load(struct settings *, char **cause);
int settings_load_hosts(struct settings *, char **cause);
void settings_free(struct settings *);

/* mounts.c */
int mount_check(const char *spec, char *const *roots, size_t nroots, int mode,
    const char *profile, struct session_mount *, char **cause);
void mount_free(struct session_mount *);
long long mount_usage_bytes(const char *dir);

/* beneath.c */
#define BENEATH_NOBODY   65534
#define BENEATH_FIRST_ID 1000 /* ids below are the system's (Debian) */
const char *beneath_root(const char *path, char *const *roots, size_t n);
int beneath_open(const char *root, const char *path, char **cause);
int beneath_owner(const char *path, const struct stat *, int ro, uid_t *,
    gid_t *, char **cause);

/* fs.c */
char *fs_sock_path(const struct session_record *, size_t i);
int fs_start(struct session_record *, char **cause);
void fs_stop(const struct session_record *, int term_ms);
char *fs_cmdline(const struct session_record *);

/* image.c: what --image names, made an ext4 image */
struct image_pull_opts {
	int policy;                   /* an enum oci_pull_policy */
	void (*notice)(const char *); /* "pulling ...", may be NULL */
	void (*progress)(void *arg, const char *event, const char *digest,
	    int64_t done, int64_t total); /* skopeo's steps, may be NULL */
	void *arg;
	/* Out, for an image by reference (the caller frees them): */
	char *ref;     /* its text: docker.io/library/alpine:3 */
	char *digest;  /* its manifest's digest */
	cJSON *config; /* its config's "config" (Env, Cmd, ...) */
	int exit;      /* on failure: an OCI_EXIT_* status, or 0 */
};
int image_resolve(const char *home, const char *spec, struct image_pull_opts *,
    char **out, char **cause);
void image_pull_opts_free(struct image_pull_opts *);
cJSON *image_list(const char *home);
char *image_identity(const char *home, const char *spec);
int image_prune(const char *home, cJSON *removed, char **cause);
/* image.c's helpers for image-oci.c */
int image_is_ext4(const char *path);
int image_from_dir(
    const char *dir, const char *out, const char *fr, char **cause);
char *fakeroot_state(const char *cache);
char **under_fakeroot(char *const *argv, const char *fr, int load);
long long image_max(void);
/* image-oci.c: images by reference (oci/) */
int image_oci_resolve(const char *home, const char *word,
    struct image_pull_opts *, char **out, char **cause);
char *image_oci_identity(const char *home, const char *word);

/* net.c */
int net_allow_check(const char *v, char **cause);
int net_publish_check(const char *v, char **cause);
int net_has_nic(const struct session_record *);
#define NET_FWD_CONNS 64 /* allowed hosts' connections at once, per session */
int net_cmd_path_ok(const char *path);
char *net_netdev(const struct session_record *, const char *limiter);
int net_uses_passt(const struct session_record *);
int net_start(const struct session_record *, int *qemu_fd, char **cause);
void net_stop(const struct session_record *, int term_ms);
char *net_cmdline(const struct session_record *);

/* logcap.c: logs kept bounded (the current part and the one before) */
#define LOGCAP_DEFAULT (4 << 20)
#define LOGCAP_MIN     (4LL << 10)
#define LOGCAP_MAX     (1LL << 30)
char *logcap_prev_path(const char *path);
int logcap_rotate(const char *path, off_t max);

/* workspace.c */
char *mkfs_find(char **cause);
int run_quiet(char *const argv[], char **cause);
int workspace_create(const char *path, int64_t size_mb, char **cause);
int workspace_check(const char *path, char **cause);
int workspace_check_mode(const char *path, int writable, char **cause);
int workspace_in_use(
    const char *home, const char *path, const char *self, char **cause);
char *workspace_keep(
    const char *home, const char *name, const char *path, char **cause);

/* proc.c */
pid_t proc_spawn(char *const argv[], int pass_fd, const char *log_path,
    const char *exit_path, char **cause);
int proc_exit_read(const char *path, struct session_exit *);
int proc_exit_wait(const char *path, uint64_t deadline);
int proc_is_reaper(void);

/* A watcher the reaper runs while the program lives (proc.c). */
struct proc_watch {
	const char *(*tick)(
	    void *arg, pid_t pid); /* NULL, or why it ended pid */
	void *arg;
	int tick_ms;
	void (*ended)(void *arg, pid_t); /* once it ended (NULL: none) */
};
pid_t proc_spawn_watched(char *const argv[], int pass_fd, const char *log_path,
    const char *exit_path, const struct proc_watch *, char **cause);
int proc_matches(pid_t pid, const char *needle);
int proc_wait_gone(pid_t pid, const char *needle, uint64_t deadline);
int proc_terminate(pid_t pid, const char *needle, int term_ms);
char *file_tail(const char *path, int lines);

/* console.c */
int console_start(struct session_record *, int adopt, char **cause);
char *console_serial_path(const struct session_record *);
char *session_gdb_path(const struct session_record *);
void console_stop(const struct session_record *, int term_ms);
int console_attach(
    const struct session_record *, int want_rw, int *rw, char **cause);

/* launch.c */
struct launch_opts {
	const char *home, *name;
	const char *dir;   /* where it lives; NULL: HOME/sessions/NAME (pool) */
	const char *accel; /* NULL: accel_detect() */
	int cpus, memory_mb;
	int boot_timeout_s;
	const char *kernel, *initrd; /* NULL: the default guest image */
	int vsock_kernel;            /* use /dev/vhost-vsock, no bridge */
	const unsigned *allow_ports;
	size_t nallow_ports;
	int64_t disk_mb;               /* size of a new workspace; 0: default */
	const struct profile *profile; /* resolved policy; NULL: none */
	char *const *allow_hosts;      /* --allow-host values (checked) */
	size_t nallow_hosts;
	char *const *publish; /* --publish values (checked) */
	size_t npublish;
	char *const *labels; /* --label values (checked) */
	size_t nlabels;
	const struct session_mount *mounts; /* checked --mount folders */
	size_t nmounts;
	const char *workspace; /* attach this disk image instead */
	const char *image;     /* --image as given, or NULL */
	int pull_policy;       /* --pull: an enum oci_pull_policy */
	void (*pull_progress)(void *, const char *, const char *, int64_t,
	    int64_t);          /* a pull's steps, may be NULL */
	void *pull_arg;        /* its first argument */
	int *image_exit;       /* out: an OCI_EXIT_* when the image failed */
	int64_t ttl_s, idle_s; /* see struct session_record */
	char *hostname;        /* --hostname, or NULL */
	int lock_wait_ms;      /* start: wait this long for a busy lock */
	const char *append;    /* --append: kernel words for this boot */
	int persist_append;    /* --persist: and every boot after (new) */
	int no_agent;          /* --no-agent: ready once QEMU runs */
	int record;            /* --record (new): vmux record after each boot */
	int record_input;      /* --record-input: and what is typed */
	int gdb;               /* --gdb: QEMU's gdbstub at session_gdb_path */
	int paused;            /* --paused: the CPU waits for gdb (with gdb) */
	const char *rescue_disk; /* vmux rescue: attach this, no workspace */
	int rescue_rw;
	const char *incoming; /* restore this saved state (pause.c) */
	int cold; /* start: boot a paused session, forgetting its state;
	             new: boot a kernel, not from a template */
	const char *machine_id; /* resume: a fork's new one (32 hex) */
	/* ask the agent this (made anew each try), not ping, until it
	 * answers; NULL: ping */
	cJSON *(*ready_req)(
	    const struct launch_opts *, const struct session_record *);
	cJSON **ready_reply; /* out: its answer, or {"error"} (the caller's) */
	void (*notice)(const char *); /* progress/fallback lines, may be NULL */
	volatile int *interrupted;    /* set by a signal handler; may be NULL */
};

int session_launch(
    const struct launch_opts *, struct session_record *out, char **cause);
int session_start(
    const struct launch_opts *, struct session_record *out, char **cause);
int session_env_custom(void);
int launch_claim(
    const struct launch_opts *, struct session_record *, char **cause);
int launch_run(
    const struct launch_opts *, struct session_record *, char **cause);
void launch_reset(struct session_record *);

/* state.c: a paused session's files (pause.c writes and loads them) */
char *state_path(const struct session_record *, const char *name);
char *state_key(const struct session_record *);
char *state_sum_of(const char *state, off_t ram_size);
int state_check(const struct session_record *, char **cause);
void state_discard(struct session_record *);
char *session_why_no_pause(const struct session_record *);
int file_copy_sparse(
    const char *src, const char *dst, int sync, off_t *size, char **cause);
int file_copy_cow(const char *src, const char *dst, char **cause);
void dir_sync(const char *dir);
int ram_sync(const char *path, off_t *size, char **cause);
void ram_drop_cache(const char *path);
long long ram_free_mb(const char *path);

/* pause.c: a session's state in files: pause, resume */
struct qmp;
int state_save_begin(struct qmp *, int fd, char **cause);
int state_save(struct qmp *, char **cause);
void signals_hold(sigset_t *old);
void signals_release(const sigset_t *old);
int state_restore(struct session_record *, const char *state, uint64_t deadline,
    char **cause);
int session_pause(const char *home, const char *name,
    void (*notice)(const char *), char **cause);
int resume_boot(
    const struct launch_opts *, struct session_record *, char **cause);
int session_resume(
    const struct launch_opts *, struct session_record *out, char **cause);
int session_wake(const char *home, struct session_record *,
    void (*notice)(const char *), char **cause);
int session_wake_child(const char *home, struct session_record *, char **cause);

/* template.c: a cold new that boots nothing */
int template_use(const struct launch_opts *, struct session_record *,
    const char *key, char **cause);
void template_capture(
    const struct launch_opts *, const struct session_record *, const char *key);
char *launch_template_key(
    const struct launch_opts *, const struct session_record *);

/* fork.c: running copies of a session */
struct fork_result {
	struct fork_child {
		char *name;        /* the caller's */
		int made;          /* its record and files were made */
		int ok;            /* ... and it runs */
		uint64_t ready_ms; /* from its resume to its agent's answer */
		char *error;       /* why not, or NULL */
	} * child;
	size_t n;
	uint64_t frozen_ms; /* how long the parent was stopped */
};
int session_fork(const char *home, const char *parent, struct fork_result *,
    void (*notice)(const char *), char **cause);
void fork_result_free(struct fork_result *);

/* stop.c */
char *session_qemu_needle(const struct session_record *);
const char *session_state(const struct session_record *);
int session_exit_get(const struct session_record *, struct session_exit *);
int session_qemu_alive(const struct session_record *);
int session_bridge_alive(const struct session_record *);
int session_remove_at(const char *home, const char *dir, const char *name,
    int force, int keep_workspace, char **kept, char **cause);
int session_remove(const char *home, const char *name, int force,
    int keep_workspace, char **kept, char **cause);
int session_stop_procs(const struct session_record *);
int session_halt(const char *home, const char *name, const char *reason,
    int power_ms, void (*notice)(const char *), char **cause);

/* qmp.c: QEMU's monitor, over the session's qmp.sock */
struct qmp {
	int fd;
	char *buf; /* received, [0, len) not yet a line */
	size_t len, cap;
	char *line; /* the last line read */
};
int qmp_open(struct qmp *, const char *path, uint64_t deadline, char **cause);
cJSON *qmp_call(
    struct qmp *, const char *cmd, int fd, uint64_t deadline, char **cause);
int qmp_run(struct qmp *, const char *cmd, uint64_t deadline, char **cause);
char *qmp_query_status(
    struct qmp *, const char *query, uint64_t deadline, char **cause);
void qmp_close(struct qmp *);
int qmp_quit(const char *path, uint64_t deadline, char **cause);

/* transport.c */
struct host;
struct vsock_target {
	unsigned cid;            /* AF_VSOCK CID (used when uds is NULL) */
	const char *uds;         /* bridge hybrid-vsock socket */
	const struct host *host; /* else: a session on another host */
	const char *session;     /* with host: its name there */
};

#define TRANSPORT_RETRY 1 /* transport_handshake: closed with zero bytes */

void session_target(const struct session_record *, struct vsock_target *);
int transport_handshake(int fd, unsigned port, uint64_t deadline,
    unsigned *local_port, char **cause);
int transport_connect(const struct vsock_target *, unsigned port,
    uint64_t deadline, char **cause);
int wait_fd(int fd, short events, uint64_t deadline);
void transport_cancel_on(volatile int *flag);
int transport_cancelled(void);
int send_all_deadline(int fd, const void *buf, size_t len, uint64_t deadline);

/* host.c: other machines, reached over ssh */
struct host {
	char *name; /* the settings' name, or the URL as given */
	char *url;  /* ssh://[USER@]ADDR[:PORT][/VMUX] */
	char *user; /* NULL: ssh's default */
	char *addr;
	int port;   /* 0: ssh's default */
	char *vmux; /* vmux's path there ("vmux": on its PATH) */
	/* slurm://[PARTITION][?account=A&qos=Q&dir=D]: a Slurm cluster whose
	 * jobs run the sessions (cli/slurm.c); addr etc. unset then */
	int slurm;
	char *partition, *account, *qos; /* NULL: Slurm's defaults */
	char
	    *dir; /* the sessions' shared folder; NULL: $VMUX_HOME/slurm/NAME */
};
int host_name_valid(const char *name, char **cause);
int host_parse_url(const char *url, struct host *, char **cause);
int host_resolve(
    const char *spec, const struct settings *, struct host *, char **cause);
void host_free(struct host *);
char *host_quote(const char *word);
int host_run(char *const *argv, int with_stderr, uint64_t deadline, size_t max,
    char **out);
#define HOST_TTY      0x1 /* host_ssh_argv: a terminal there (ssh -t) */
#define HOST_NO_STDIN 0x2 /* ... and no stdin (ssh -n) */
char **host_ssh_argv(const struct host *, int mode, char *const *words,
    size_t nwords, char **cause);
void host_argv_free(char **);
char *host_last_line(const char *text);
int host_connect(const struct host *, char **cause);
int host_alive(const struct host *);
int host_disconnect(const struct host *);
int host_stream(const struct host *, const char *session, unsigned port,
    uint64_t deadline, char **cause);
int host_capture(const struct host *, char *const *words, size_t nwords,
    uint64_t deadline, size_t max, char **out, char **cause);

/* agent_client.c */
/*
 * The most one JSON reply may hold. Replies are control answers (ping,
 * list_shells, close, kill, paths; output travels in framed streams), a
 * few KiB; a hostile guest must not make the host parse more.
 */
#define AGENT_MAX_REPLY (1024u * 1024)
/* The longest shell command shown (the rest is "..."). */
#define AGENT_COMMAND_MAX 256
char *agent_shell_command(const cJSON *shell, const char *none);

/* How a cause from the agent's own error reply begins. */
#define AGENT_REFUSED "agent: "
int agent_refused(const char *cause);
cJSON *agent_parse_reply(const char *buf, size_t len, char **cause);
const char *agent_error_code(void);
int agent_send_request(
    int fd, const cJSON *req, uint64_t deadline, char **cause);
ssize_t agent_read_reply(int fd, uint64_t deadline, int to_newline, size_t max,
    char **out, char **cause);
cJSON *agent_exchange(int fd, const cJSON *req, uint64_t deadline, char **raw,
    size_t *raw_len, char **cause);
cJSON *agent_req_ping(void);
cJSON *agent_req_list_shells(void);
cJSON *agent_req_resumed(const char *hostname, const char *machine_id);
cJSON *agent_req_shutdown(void);
cJSON *agent_req_open_shell(const char *id, int cols, int rows);
cJSON *agent_req_close_shell(const char *id);
cJSON *agent_req_attach_shell(
    const char *id, int64_t cursor, const char *as, int watch, int input);
cJSON *agent_req_extract_archive(const char *dest, int64_t size);
cJSON *agent_req_export_archive(const char *path);
cJSON *agent_req_write_shell(const char *id, const char *input, size_t n);
cJSON *agent_req_read_shell(
    const char *id, int64_t cursor, int max_chars, int wait_ms);
cJSON *agent_req_resize_shell(const char *id, int cols, int rows);
cJSON *agent_req_signal_shell(const char *id, const char *sig);
cJSON *agent_req_exec(const char *const *argv, int timeout_s);
cJSON *agent_call(const struct vsock_target *, const cJSON *req,
    uint64_t connect_deadline, uint64_t deadline, char **raw, size_t *raw_len,
    char **cause);

/* attach.c */
#define ATTACH_CLIENT_OUT_MAX (256 * 1024) /* queued outgoing frames */

struct attach_frame {
	uint8_t type; /* enum vmux_attach_type (proto/attach.h) */
	uint32_t len;
	const uint8_t *payload;
};

struct attach_client {
	int fd;
	uint8_t *in; /* received; [in_off, in_len) not yet handed out */
	size_t in_off, in_len, in_cap;
	uint8_t *out; /* frames to send; [out_off, out_len) pending */
	size_t out_off, out_len, out_cap;
	int eof; /* the agent closed its side */
};

cJSON *agent_line_call(int fd, const cJSON *req, uint64_t deadline,
    uint8_t **rest, size_t *rest_len, char **cause);
void attach_client_init(
    struct attach_client *, int fd, const uint8_t *pre, size_t pre_len);
void attach_client_free(struct attach_client *);
ssize_t attach_client_read(struct attach_client *);
void attach_client_feed(struct attach_client *, const void *, size_t);
int attach_client_next(struct attach_client *, struct attach_frame *);
size_t attach_client_room(const struct attach_client *);
int attach_client_pending(const struct attach_client *);
int attach_client_queue(
    struct attach_client *, uint8_t type, const void *payload, size_t len);
int attach_client_resize(struct attach_client *, int cols, int rows);
int attach_client_flush(struct attach_client *);
void attach_client_drop_output(struct attach_client *);
int attach_decode_data(const struct attach_frame *, uint64_t *cursor,
    const uint8_t **bytes, size_t *len);
int attach_decode_exit(
    const struct attach_frame *, int *code, int *sig, uint64_t *cursor);
int attach_decode_truncated(
    const struct attach_frame *, uint64_t *from, uint64_t *to);
int attach_decode_resize(const struct attach_frame *, int *cols, int *rows);
int attach_exit_status(int code, int sig);

/* Who attaches (proto/attach.h's "as" and "watch"). */
struct attach_who {
	const char *as; /* a label, or NULL: unnamed */
	int watch;      /* keys dropped unless it takes the keyboard */
	int input;      /* sent what the others type (TYPED frames) */
};
/* A CLIENTS frame, decoded. */
struct attach_roster {
	char *others;   /* the other clients, printable: "teacher (watching)" */
	int n;          /* how many others */
	char *keyboard; /* who holds the keyboard, or NULL */
	int mine;       /* we do */
};
int attach_decode_clients(const struct attach_frame *, struct attach_roster *);
void attach_roster_free(struct attach_roster *);
const char *attach_default_as(void);
int attach_shell_find(const struct vsock_target *, const char *id,
    size_t replay, uint64_t connect_deadline, uint64_t deadline,
    int64_t *cursor, int64_t *end, char **cause);
int attach_shell_open(const struct vsock_target *, const char *shell_id,
    int64_t cursor, const struct attach_who *, uint64_t deadline,
    struct attach_client *, cJSON **record, char **cause);

#endif
