#!/usr/bin/env bash
# 10-build.sh: checks of the repository and the build system itself, no
# guest booted: no tracked file over 1 MiB (build output, test data or a
# stray blob must not be committed), plain `make` without the build
# dependencies stops with one line saying what to run, pkg-config is
# asked per package, and guest/mkinitrd handles the built kernel's
# built-in modules. Prints "build: N passed, N failed".
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
TMP=$(mktemp -d /tmp/vmux-build-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pass=0 failed=0 skipped=0

# check NAME CMD...: one check; CMD's status decides.
check() {
	local name=$1 out=$TMP/out
	shift
	if ("$@") >"$out" 2>&1; then
		pass=$((pass + 1))
		echo "ok   $name"
	else
		failed=$((failed + 1))
		echo "FAIL $name"
		sed 's/^/    /' "$out" | tail -n 20
	fi
}

# Every file the repository holds (tracked ones in a git checkout).
repo_files() {
	if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$ROOT" ls-files -z
	else
		find . -path './build*' -prune -o -path './.git' -prune -o \
		    -type f -print0
	fi
}

t_no_big_files() {
	local big
	big=$(repo_files | xargs -0 stat -c '%s %n' -- 2>/dev/null |
	    awk '$1 > 1048576 { printf "  %s (%d KiB)\n", substr($0, index($0, " ") + 1), $1 / 1024 }')
	[[ -z $big ]] || { echo "tracked files over 1 MiB:"; echo "$big"; return 1; }
}

# A fake dpkg-query on PATH that says libvterm-dev is not installed.
t_missing_dep_one_line() {
	local fake=$TMP/fake-dpkg out rc
	mkdir -p "$fake"
	cat >"$fake/dpkg-query" <<'FAKE'
#!/bin/sh
case "$*" in *libvterm-dev*) exit 1 ;; esac
exec /usr/bin/dpkg-query "$@"
FAKE
	chmod +x "$fake/dpkg-query"
	out=$(env -u VMUX_DEPS_OK PATH="$fake:$PATH" make --no-print-directory \
	    BUILD="$TMP/b" 2>&1)
	rc=$?
	echo "$out"
	[[ $rc -ne 0 ]] || { echo "make succeeded"; return 1; }
	[[ $(printf '%s\n' "$out" | wc -l) -eq 1 ]] || { echo "not one line"; return 1; }
	[[ $out == *"missing build dependencies: libvterm-dev;"*"make deps"* ]] ||
	    { echo "message does not name the package and make deps"; return 1; }
	[[ ! -e $TMP/b ]] || { echo "something was built"; return 1; }
}

# A fake pkg-config that knows every package but vterm.
t_pkg_config_per_package() {
	local fake=$TMP/fake-pc got want
	mkdir -p "$fake"
	cat >"$fake/pkg-config" <<'FAKE'
#!/bin/sh
[ "$1" = --cflags ] || exit 1
[ "$2" = vterm ] && exit 1
echo "-I/fake/$2"
FAKE
	chmod +x "$fake/pkg-config"
	got=$(PATH="$fake:$PATH" make --no-print-directory print-PKG_CFLAGS)
	want="-I/fake/libcjson -I/fake/libuv -I/fake/ncursesw -I/fake/zlib -I/fake/libwebsockets"
	[[ $got == "$want" ]] || { echo "got '$got', want '$want'"; return 1; }
}

# guest/mkinitrd on the build's own kernel (make test builds it first): a
# module built into it (binfmt_script in every Debian flavour, ext4 too in
# the cloud one) is neither shipped nor loaded, a loadable one is both,
# and a name the kernel lacks stops the build, named.
t_mkinitrd_builtin_modules() {
	local root bin=$BUILD/bin builtin m list=$TMP/modules.list out load
	root=$(cat "$BUILD/guest/kernel.root") || return 1
	builtin=
	for m in ext4 binfmt_script; do # ext4 where it is built in
		grep -q "/$m\.ko$" "$root"/lib/modules/*/modules.builtin &&
		    { builtin=$m; break; }
	done
	[[ -n $builtin ]] || { echo "no known built-in module in $root"; return 1; }
	printf 'virtio_mmio\nvirtio_blk\n%s\n' "$builtin" >"$list"
	guest/mkinitrd --kernel-root "$root" --modules "$list" \
	    --init "$bin/vmux-init" --nc "$bin/vmux-nc" --out "$TMP/i.img" || return 1
	load=$(gzip -dc "$TMP/i.img" | (cd "$TMP" && cpio -i --quiet --to-stdout '*/vmux.load'))
	echo "vmux.load: $load"
	[[ $load == *virtio_blk.ko* ]] || { echo "virtio_blk not loaded"; return 1; }
	[[ $load != *"$builtin.ko"* ]] || { echo "$builtin (built in) in the load list"; return 1; }
	gzip -dc "$TMP/i.img" | cpio -t --quiet | grep -q "/$builtin\.ko$" &&
	    { echo "$builtin.ko shipped"; return 1; }
	echo nosuchmod >>"$list"
	out=$(guest/mkinitrd --kernel-root "$root" --modules "$list" \
	    --init "$bin/vmux-init" --nc "$bin/vmux-nc" --out "$TMP/j.img" 2>&1)
	[[ $? -ne 0 && $out == *"module nosuchmod not in"* ]] ||
	    { echo "unknown module: $out"; return 1; }
	[[ ! -e $TMP/j.img ]] || { echo "an image was written"; return 1; }
}

# The default guest's kernel (vmux's own, which make test builds first) has
# every option guest/lean.config sets, and none it turns off; KVM's and
# TCG's clocks both, though only TCG runs here. The check itself fails on
# a config that lost an option, naming it.
t_lean_kernel_config() {
	local cfg=$BUILD/guest/lean/vmlinux.config o out
	[[ -f $cfg ]] || { echo "$cfg missing"; return 1; }
	guest/kernel-lean --check-config guest/lean.config "$cfg" || return 1
	for o in KVM_GUEST PARAVIRT PVH VIRTIO_MMIO VIRTIO_VSOCKETS VIRTIO_BLK \
	    EXT4_FS VIRTIO_FS MEMCG CGROUP_PIDS X86_TSC; do
		grep -qx "CONFIG_$o=y" "$cfg" || { echo "CONFIG_$o not built in"; return 1; }
	done
	grep -qx 'CONFIG_MODULES=y' "$cfg" && { echo "modules enabled"; return 1; }
	grep -v '^CONFIG_VIRTIO_BLK=' "$cfg" >"$TMP/lost.config"
	out=$(guest/kernel-lean --check-config guest/lean.config "$TMP/lost.config" 2>&1)
	[[ $? -ne 0 && $out == *"dropped: CONFIG_VIRTIO_BLK=y"* ]] ||
	    { echo "a lost option: $out"; return 1; }
	{ cat "$cfg"; echo CONFIG_VT=y; } >"$TMP/forced.config"
	out=$(guest/kernel-lean --check-config guest/lean.config "$TMP/forced.config" 2>&1)
	[[ $? -ne 0 && $out == *"on again: CONFIG_VT"* ]] ||
	    { echo "an option turned on again: $out"; return 1; }
}

check "no tracked file over 1 MiB" t_no_big_files
check "plain make without a build package says so in one line" t_missing_dep_one_line
check "pkg-config is asked per package" t_pkg_config_per_package
check "mkinitrd: built-in modules neither shipped nor loaded" t_mkinitrd_builtin_modules
# (make test builds vmux's kernel only when it is the default)
if [[ $(cat "$BUILD/guest/kernel.choice") == lean ]]; then
	check "the lean kernel's config is the fragment's" t_lean_kernel_config
else
	skipped=$((skipped + 1))
	echo "skip the lean kernel's config is the fragment's: built with GUEST_KERNEL=debian"
fi
echo "build: $pass passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
