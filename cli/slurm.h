/*
 * slurm.h: sessions as Slurm jobs (slurm.c routes a cluster's commands;
 * slurm-job.c is a session's job, slurm-ls.c what the cluster shows).
 * Private to those three.
 */
#ifndef VMUX_CLI_SLURM_H
#define VMUX_CLI_SLURM_H

#include <stddef.h>
#include <stdint.h>

struct args;
struct host;
struct session_record;

#define SLURM_OUT_MAX     (64 * 1024 * 1024) /* what squeue may print */
#define SLURM_CMD_MS      30000              /* one Slurm command */
#define SLURM_READY_MS    (15 * 60 * 1000) /* a job's boot, pending included */
#define SLURM_STOP_MS     60000            /* the guest's clean poweroff */
#define SLURM_END_MS      120000           /* a cancelled job's end */
#define SLURM_OVERHEAD_MB 256 /* QEMU and vmux's own, beside guest RAM */
#define SLURM_JOB_PREFIX  "vmux-"
/* squeue's columns, one task of an array a line (-r) */
#define SLURM_QUEUE_FORMAT "%j|%A|%i|%K|%T|%N|%r|%L|%k"
#define SLURM_QUEUE_FIELDS 9       /* the comment last: it may hold a '|' */
#define SLURM_COMMENT      "vmux " /* and the cluster's folder */
/* Slurm's notice ahead of the time limit: vmux stops the guest on it */
#define SLURM_TIME_SIGNAL "--signal=B:USR2@60"

/* A session's job, as squeue says. */
struct slurm_job {
	char id[32];    /* the job's own id (%A): srun --jobid */
	char sid[48];   /* Slurm's name for it (%i: 12_3 in an array) */
	char state[32]; /* PENDING, RUNNING, ...; "" when there is none */
	char node[128];
	char reason[128];
	char left[32]; /* time left */
};

/* slurm-job.c */
extern const char *slurm_scope; /* the cluster's folder (slurm_route) */
int slurm_run(char *const *argv, char **out);
char *slurm_queue(char **cause);
char *slurm_labels(char *const *labels, size_t n);
void slurm_job_in(
    const char *queue, const char *name, struct slurm_job *j, int ending);
int slurm_job(const char *name, struct slurm_job *j, int ending, char **cause);
int slurm_submit(const struct host *h, const char *dir, const char *verb,
    const char *name, const char *array, const char *labels, int ncpus,
    long long mem_mb, long long ttl, char **words, size_t nw, char *id,
    size_t idlen);
char *slurm_tail(const char *path);
char **slurm_srun_argv(const char *dir, const char *name, const char *id,
    const char *opt, char *const *words, size_t nw);
int slurm_ready(const char *dir, const char *name, const char *id);
int slurm_scancel(char **argv);
void slurm_kill(const char *name);
int slurm_reason_final(const char *reason);
int slurm_wait_ready(const char *dir, const char *name, const char *cluster);
int slurm_cancel(const char *name);
int slurm_record(const char *dir, const char *name, struct session_record *r);

/* slurm-ls.c */
int slurm_ls(const char *dir, const struct args *a);
int slurm_model(const char *dir, struct args *a);

#endif
