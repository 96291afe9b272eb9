/*
 * ping.c: the ping action, a cheap health and identity report: agent
 * version, kernel, uptime, host name, memory and what the agent is doing.
 */
#include <sys/sysinfo.h>
#include <sys/utsname.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent.h"

/* Seconds since boot from /proc/uptime (sysinfo as a fallback). */
static double
uptime_seconds(void)
{
	struct sysinfo si;
	double up;
	FILE *f;

	if ((f = fopen("/proc/uptime", "re")) != NULL) {
		if (fscanf(f, "%lf", &up) == 1) {
			fclose(f);
			return up;
		}
		fclose(f);
	}
	if (sysinfo(&si) == 0)
		return (double)si.uptime;
	return -1;
}

/*
 * When the user last did something: a request other than ping, a key sent
 * to a shell, output from a shell. Commands and transfers in progress count
 * as activity all along. Main loop only (exec and file threads are counted
 * by exec_serve_active and files_serve_active instead).
 */
static uint64_t last_activity;

/* When a command or transfer last ended (their threads write it). */
static _Atomic uint64_t last_ended;

/* Note activity now. */
void
activity_touch(void)
{
	last_activity = mono_ms();
}

/* Note that a command or transfer ends now (any thread): idle counts from
 * its end, not from its request. */
void
activity_ended(void)
{
	atomic_store(&last_ended, mono_ms());
}

/* Seconds since the last activity (0 while a command or transfer runs). */
static double
idle_seconds(void)
{
	uint64_t ended;

	if (last_activity == 0)
		last_activity = mono_ms(); /* idle counts from the start */
	if (exec_serve_active() > 0 || files_serve_active() > 0)
		return 0;
	/* read after the counts: a thread notes its end before it leaves
	 * them */
	ended = atomic_load(&last_ended);
	if (ended > last_activity)
		last_activity = ended;
	return (double)(mono_ms() - last_activity) / 1000;
}

/* The ping reply (attached: clients on shells); the caller deletes it. */
cJSON *
ping_info(int shells, int execs, int attached)
{
	static const char *actions[] = {"exec", "exec_stream", "ping",
	    "shutdown", "open_shell", "read_shell", "write_shell",
	    "signal_shell", "resize_shell", "close_shell", "list_shells",
	    "attach_shell", "extract_archive", "export_archive", "resumed"};
	cJSON *obj = cJSON_CreateObject();
	struct utsname u;
	struct sysinfo si;
	char host[256];

	cJSON_AddBoolToObject(obj, "ok", 1);
	cJSON_AddStringToObject(obj, "version", VMUX_VERSION);
	cJSON_AddNumberToObject(obj, "protocol", 1);
	if (uname(&u) == 0) {
		json_add_str(obj, "os", u.sysname);
		json_add_str(obj, "kernel", u.release);
		json_add_str(obj, "machine", u.machine);
	}
	cJSON_AddNumberToObject(obj, "uptime_seconds", uptime_seconds());
	if (gethostname(host, sizeof host) == 0) {
		host[sizeof host - 1] = '\0';
		json_add_str(obj, "hostname", host);
	}
	cJSON_AddNumberToObject(obj, "pid", getpid());
	cJSON_AddNumberToObject(obj, "time", wall_time());
	if (sysinfo(&si) == 0) {
		cJSON_AddNumberToObject(
		    obj, "mem_total_bytes", (double)si.totalram * si.mem_unit);
		cJSON_AddNumberToObject(
		    obj, "mem_free_bytes", (double)si.freeram * si.mem_unit);
	}
	cJSON_AddNumberToObject(obj, "idle_seconds", idle_seconds());
	cJSON_AddNumberToObject(obj, "shells", shells);
	cJSON_AddNumberToObject(obj, "execs", execs);
	cJSON_AddNumberToObject(obj, "attached", attached);
	cJSON_AddItemToObject(obj, "actions",
	    cJSON_CreateStringArray(actions, (int)nitems(actions)));
	return obj;
}
