/*
 * accel.c: which accelerator QEMU should use, and the host TSC rate that a
 * TCG guest needs on its command line (see qemu.c).
 *
 * KVM only where hardware KVM really works: /dev/kvm opening is not enough.
 * Some clouds load kvm_pvm (a nested "pagetable virtual machine") which
 * answers the KVM API but only runs guest kernels built for PVM; a stock
 * kernel hangs with no output. So: /dev/kvm opens and speaks API 12, kvm_pvm
 * is not loaded, and kvm_intel or kvm_amd is.
 */
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <linux/kvm.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "qemu.h"

#define MODULES_DIR "/sys/module"

/* Is module `name` loaded (a directory under modules_dir)? */
static int
module_loaded(const char *modules_dir, const char *name)
{
	char path[512];
	struct stat sb;

	snprintf(path, sizeof path, "%s/%s", modules_dir, name);
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/*
 * The decision, from what was observed: errno of opening /dev/kvm (0 if it
 * opened), its KVM_GET_API_VERSION answer, and the loaded modules.
 */
const char *
accel_decide(int kvm_errno, int kvm_api, const char *modules_dir, char **why)
{
	if (kvm_errno != 0) {
		xasprintf(why, "/dev/kvm: %s", strerror(kvm_errno));
		return "tcg";
	}
	if (kvm_api != KVM_API_VERSION) {
		xasprintf(why, "/dev/kvm: API version %d, not %d", kvm_api,
		    KVM_API_VERSION);
		return "tcg";
	}
	if (module_loaded(modules_dir, "kvm_pvm")) {
		xasprintf(why, "kvm_pvm host module: stock guest kernels hang");
		return "tcg";
	}
	if (module_loaded(modules_dir, "kvm_intel")) {
		xasprintf(why, "/dev/kvm with kvm_intel");
		return "kvm";
	}
	if (module_loaded(modules_dir, "kvm_amd")) {
		xasprintf(why, "/dev/kvm with kvm_amd");
		return "kvm";
	}
	xasprintf(why, "/dev/kvm without kvm_intel or kvm_amd");
	return "tcg";
}

/* "kvm" where hardware KVM really works, else "tcg"; *why says why. */
const char *
accel_detect(char **why)
{
	int fd, api = -1, err = 0;

	if ((fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)) < 0)
		err = errno;
	else {
		api = ioctl(fd, KVM_GET_API_VERSION, 0);
		close(fd);
	}
	return accel_decide(err, api, MODULES_DIR, why);
}

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>

/* Nanoseconds on CLOCK_MONOTONIC_RAW (not slewed by NTP, like the TSC). */
static unsigned long long
raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL +
	    (unsigned long long)ts.tv_nsec;
}

/*
 * One (clock, TSC) pair: the TSC read sandwiched between two clock reads,
 * best of a few tries so a preemption in between does not skew it.
 */
static void
sample(unsigned long long *ns, unsigned long long *tsc)
{
	unsigned long long a, b, t, best = ~0ULL;
	int i;

	for (i = 0; i < 5; i++) {
		a = raw_ns();
		t = __rdtsc();
		b = raw_ns();
		if (b - a < best) {
			best = b - a;
			*ns = a + (b - a) / 2;
			*tsc = t;
		}
	}
}

/*
 * The host TSC rate in kHz, measured over 20 ms against the raw monotonic
 * clock (~50 ppm); 0 if the clocks went wrong meanwhile.
 */
static unsigned long
tsc_khz_measure(void)
{
	unsigned long long n0, t0, n1, t1;
	struct timespec pause = {0, 20 * 1000 * 1000};

	sample(&n0, &t0);
	while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
		;
	sample(&n1, &t1);
	if (n1 <= n0 || t1 <= t0)
		return 0;
	return (unsigned long)((t1 - t0) * 1000000ULL / (n1 - n0));
}
#else
/* Elsewhere QEMU's TCG TSC counts host nanoseconds: 1 GHz. */
static unsigned long
tsc_khz_measure(void)
{
	return 1000000;
}
#endif

/* A rate any x86 host has (kHz): what is outside was misread or mismeasured. */
#define TSC_KHZ_MIN 100000UL
#define TSC_KHZ_MAX 10000000UL

/*
 * The host TSC rate in kHz, which is a TCG guest's TSC rate; kept once
 * measured. 0 when the measurement is out of any host's range (the host
 * slept in the middle, say): the next call measures again.
 */
unsigned long
tsc_khz(void)
{
	static unsigned long cached;
	unsigned long khz;

	if (cached != 0)
		return cached;
	khz = tsc_khz_measure();
	if (khz >= TSC_KHZ_MIN && khz <= TSC_KHZ_MAX)
		cached = khz;
	return cached;
}

/*
 * tsc_khz(), kept in the file at path as "BOOT_ID KHZ" so that only the
 * first boot after the host's own boot pays the 20 ms: the rate is fixed
 * until the host reboots. A missing, stale, unreadable or implausible file
 * is measured again and rewritten (atomically, errors ignored: the cache is
 * a saving); a measurement out of range is never written down (0).
 */
unsigned long
tsc_khz_cached(const char *path)
{
	char boot[64] = "", line[128], cached_boot[64];
	unsigned long khz = 0;
	FILE *f;
	int n;

	if ((f = fopen("/proc/sys/kernel/random/boot_id", "re")) != NULL) {
		if (fgets(boot, sizeof boot, f) == NULL)
			boot[0] = '\0';
		boot[strcspn(boot, "\n")] = '\0';
		fclose(f);
	}
	if (boot[0] == '\0')
		return tsc_khz(); /* nothing to key the cache on */
	if ((f = fopen(path, "re")) != NULL) {
		if (fgets(line, sizeof line, f) != NULL &&
		    sscanf(line, "%63s %lu", cached_boot, &khz) == 2 &&
		    strcmp(cached_boot, boot) == 0 && khz >= TSC_KHZ_MIN &&
		    khz <= TSC_KHZ_MAX) {
			fclose(f);
			return khz;
		}
		fclose(f);
	}
	if ((khz = tsc_khz()) == 0)
		return 0;
	n = snprintf(line, sizeof line, "%s %lu\n", boot, khz);
	if (n > 0 && (size_t)n < sizeof line)
		(void)file_replace(path, line, (size_t)n, 0644); /* a cache */
	return khz;
}
