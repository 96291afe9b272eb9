#!/usr/bin/env bash
# 46-pool: the warm pool. With `pool 2` in the settings, `vmux pool fill`
# boots two VMs nobody lists; `vmux new` takes one (its name, labels and
# host name; nothing of anyone's in it) and the pool refills behind it by
# itself; two at once get two; a request the pool cannot meet (another
# QEMU, bridge or guest image too) boots cold; a pool VM that dies, or
# whose initrd a rebuild replaced, is replaced; rm removes a claimed VM
# whole; status counts the pool; drain stops it. Real guests throughout.
source "$(dirname "$0")/lib.sh"

# the checks set these themselves
unset VMUX_QEMU VMUX_QEMU_EXTRA VMUX_BRIDGE VMUX_GUEST_DIR
CONF=$XDG_CONFIG_HOME/vmux/config
mkdir -p "$(dirname "$CONF")"
echo "pool 2" >"$CONF"

# whatever happens: no refill starts again, the pool is drained
e2e_before_cleanup() {
	echo "pool 0" >"$CONF"
	"$VMUX" pool drain >/dev/null 2>&1
}

pool_ready() { vmux pool ls --json | jq '[.vms[] | select(.state == "ready")] | length'; }
pool_ids() { vmux pool ls --json | jq -r '[.vms[].id] | sort | join(",")'; }
# wait_ready N: until the pool has N ready VMs (its refill runs by itself)
wait_ready() { wait_for 180 eval '[[ $(pool_ready) == '"$1"' ]]'; }

t_fill_boots_hidden_vms() {
	vmux pool fill 2>"$TMP/fill.err" || { cat "$TMP/fill.err"; return 1; }
	expect_eq "ready" "$(pool_ready)" 2 || return 1
	expect_eq "ls lists none" "$(vmux ls --json | jq length)" 0 || return 1
	expect_eq "status" "$(vmux status --json | jq .pool.ready)" 2 || return 1
	expect_match "status counts them" "$(vmux status --json | jq .resources.memory_mb_in_use)" '^[1-9]' || return 1
}

t_new_claims_a_clean_vm() {
	local before dir out
	before=$(pool_ids)
	local t0=$(date +%s)
	vmux new a --label class=x >/dev/null || return 1
	# its life starts at the claim, not at the pool's boot
	local created=$(date -d "$(session_field a created)" +%s)
	((created >= t0)) || fail "created $created before the claim at $t0"
	dir=$(session_field a dir)
	expect_match "from the pool" "$dir" "/pool/pool-[0-9a-f]{8}\$" || return 1
	[[ $before == *"$(basename "$dir")"* ]] || fail "$dir was not one of $before"
	expect_eq "label" "$(session_field a 'labels.class')" x || return 1
	out=$(vmux exec a -- sh -c 'hostname; cat /etc/hostname')
	expect_eq "host name" "$out" $'a\na' || return 1
	# nothing of anyone's: no shell, an empty workspace, no history
	expect_eq "shells" "$(vmux shells a --json | jq length)" 0 || return 1
	out=$(vmux exec a -- sh -c 'ls -A /workspace; ls -A /root 2>/dev/null | grep -v "^\.ash_history$" ; true')
	expect_eq "workspace" "$out" "lost+found" || return 1
	# the pool refills by itself, the claimed one no longer in it
	wait_ready 2 || fail "the pool did not refill: $(vmux pool ls)"
	[[ $(pool_ids) != *"$(basename "$dir")"* ]] || fail "a is still in the pool"
}

t_two_at_once_get_two() {
	vmux new b >"$TMP/b.out" 2>&1 &
	local pb=$!
	vmux new c >"$TMP/c.out" 2>&1
	local rc=$?
	wait $pb || { cat "$TMP/b.out"; return 1; }
	[[ $rc -eq 0 ]] || { cat "$TMP/c.out"; return 1; }
	[[ $(session_field b dir) != "$(session_field c dir)" ]] || fail "b and c share a VM"
	expect_eq "b's name" "$(vmux exec b -- hostname)" b || return 1
	expect_eq "c's name" "$(vmux exec c -- hostname)" c || return 1
	# a name taken: an error, and the pool keeps its VMs
	wait_ready 2 || fail "no refill: $(vmux pool ls)"
	expect_status 125 vmux new c 2>/dev/null || return 1
	expect_eq "still ready" "$(pool_ready)" 2 || return 1
}

t_other_requests_boot_cold() {
	vmux new big --memory 256 >/dev/null || return 1
	expect_match "cold" "$(session_field big dir)" "/sessions/big\$" || return 1
	expect_eq "pool kept" "$(pool_ready)" 2 || return 1
	# more QEMU devices: booted cold with them (a pool VM has none)
	VMUX_QEMU_EXTRA="-device virtio-rng-device" vmux new xr >/dev/null || return 1
	expect_match "cold with extra devices" "$(session_field xr dir)" "/sessions/xr\$" || return 1
	vmux exec xr -- test -c /dev/hwrng || fail "xr has no /dev/hwrng" || return 1
	vmux rm xr >/dev/null || return 1
	expect_eq "pool kept" "$(pool_ready)" 2 || return 1
	# and a fill ignores them: the pool's plain VMs stay as they are
	local ids
	ids=$(pool_ids)
	VMUX_QEMU_EXTRA="-device virtio-rng-device" vmux pool fill 2>/dev/null || return 1
	expect_eq "pool untouched by a fill with extras" "$(pool_ids)" "$ids" || return 1
	# another QEMU (a wrapper here): booted cold with it
	printf '#!/bin/sh\nexec qemu-system-x86_64 "$@"\n' >"$TMP/qemu-wrap"
	chmod +x "$TMP/qemu-wrap"
	VMUX_QEMU=$TMP/qemu-wrap vmux new xq >/dev/null || return 1
	expect_match "cold with another QEMU" "$(session_field xq dir)" "/sessions/xq\$" || return 1
	expect_eq "xq's QEMU" "$(jq -r .qemu_bin "$VMUX_HOME/sessions/xq/session.json")" "$TMP/qemu-wrap" || return 1
	vmux rm xq >/dev/null || return 1
	# a fill under both boots plain VMs: the pool made one short first
	local gone pid f
	gone=$(vmux pool ls --json | jq -r '.vms[0].id')
	pid=$(jq -r .pids.qemu "$VMUX_HOME/pool/$gone/session.json")
	kill -9 "$pid"
	wait_for 20 eval '! kill -0 '"$pid"' 2>/dev/null' || return 1
	VMUX_QEMU=$TMP/qemu-wrap VMUX_QEMU_EXTRA="-device virtio-rng-device" vmux pool fill 2>/dev/null || return 1
	expect_eq "ready after a fill with another QEMU" "$(pool_ready)" 2 || return 1
	for f in "$VMUX_HOME"/pool/*/session.json; do
		[[ $(jq -r .qemu_bin "$f") != "$TMP/qemu-wrap" ]] || fail "a pool VM runs the wrapper" || return 1
		! tr '\0' ' ' <"/proc/$(jq -r .pids.qemu "$f")/cmdline" | grep -q virtio-rng ||
			fail "a pool VM has the extra device" || return 1
	done
	# another guest kernel and initrd and another bridge (each variable
	# alone is unit-tested: test_session_paths.c): booted cold with them;
	# a fill under both leaves the pool as it is
	local g any
	any=$(ls "$VMUX_HOME"/pool/*/session.json | head -1)
	g=$(jq -r .kernel "$any")
	mkdir -p "$TMP/guest2"
	ln -s "$g" "$TMP/guest2/vmlinux"
	cp "$(dirname "$g")/initrd.img" "$TMP/guest2/initrd.img"
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$(jq -r .bridge_bin "$any")" >"$TMP/bridge-wrap"
	chmod +x "$TMP/bridge-wrap"
	VMUX_GUEST_DIR=$TMP/guest2 VMUX_BRIDGE=$TMP/bridge-wrap vmux new xg >/dev/null || return 1
	expect_match "cold with another guest and bridge" "$(session_field xg dir)" "/sessions/xg\$" || return 1
	expect_eq "xg's initrd" "$(jq -r .initrd "$VMUX_HOME/sessions/xg/session.json")" "$TMP/guest2/initrd.img" || return 1
	expect_eq "xg's bridge" "$(jq -r .bridge_bin "$VMUX_HOME/sessions/xg/session.json")" "$TMP/bridge-wrap" || return 1
	vmux rm xg >/dev/null || return 1
	ids=$(pool_ids)
	VMUX_GUEST_DIR=$TMP/guest2 VMUX_BRIDGE=$TMP/bridge-wrap vmux pool fill 2>/dev/null || return 1
	expect_eq "pool untouched by a fill with another guest and bridge" "$(pool_ids)" "$ids" || return 1
	# the default QEMU (vmux's, beside vmux) by its full path is the same
	# QEMU: a pool VM
	VMUX_QEMU=$(dirname "$VMUX")/vmux-qemu vmux new xd >/dev/null || return 1
	expect_match "claimed with the default QEMU by path" "$(session_field xd dir)" "/pool/pool-[0-9a-f]{8}\$" || return 1
	vmux rm xd >/dev/null || return 1
	wait_ready 2 || fail "no refill: $(vmux pool ls)" || return 1
	ids=$(pool_ids)
	# a pool VM's disk is in use, though no session lists it
	local id err
	id=$(vmux pool ls --json | jq -r '.vms[0].id')
	err=$(vmux new w --workspace "$VMUX_HOME/pool/$id/workspace.img" 2>&1)
	expect_match "in use" "$err" "in use by session '$id'" || return 1
}

t_dead_pool_vm_is_replaced() {
	local id pid
	id=$(vmux pool ls --json | jq -r '.vms[0].id')
	pid=$(jq -r .pids.qemu "$VMUX_HOME/pool/$id/session.json")
	kill -9 "$pid"
	wait_for 20 eval '! kill -0 '"$pid"' 2>/dev/null' || return 1
	vmux pool fill 2>/dev/null || return 1
	expect_eq "ready" "$(pool_ready)" 2 || return 1
	[[ ! -d $VMUX_HOME/pool/$id ]] || fail "$id is still there"
	# a claim killed half-way (claimed, no session named, its vmux gone)
	id=$(vmux pool ls --json | jq -r '.vms[0].id')
	mv "$VMUX_HOME/pool/$id/ready" "$VMUX_HOME/pool/$id/claimed"
	echo "999999999 gone" >"$VMUX_HOME/pool/$id/claimed"
	vmux pool fill 2>/dev/null || return 1
	[[ ! -d $VMUX_HOME/pool/$id ]] || fail "the orphan $id is still there"
	expect_eq "ready again" "$(pool_ready)" 2 || return 1
	# a claim under way (marked taken by a live claimer, renamed, its
	# session not named yet) is left alone by a fill; once its claimer is
	# gone it is an orphan
	local holder
	id=$(vmux pool ls --json | jq -r '.vms[0].id')
	sleep 600 &
	holder=$!
	bg_track $holder
	echo "$holder c1" >"$VMUX_HOME/pool/$id/taken"
	mv "$VMUX_HOME/pool/$id/ready" "$VMUX_HOME/pool/$id/claimed"
	vmux pool fill 2>/dev/null || return 1
	[[ -d $VMUX_HOME/pool/$id ]] || fail "a fill removed a claim under way" || return 1
	kill $holder
	wait $holder 2>/dev/null
	vmux pool fill 2>/dev/null || return 1
	[[ ! -d $VMUX_HOME/pool/$id ]] || fail "the orphan $id is still there"
	expect_eq "ready at last" "$(pool_ready)" 2 || return 1
}

t_rm_removes_a_claimed_vm_whole() {
	local dir
	dir=$(session_field a dir)
	vmux rm a >/dev/null || return 1
	[[ ! -e $dir && ! -L $VMUX_HOME/sessions/a ]] || fail "left: $(ls -la "$dir" "$VMUX_HOME/sessions/a" 2>&1)"
	[[ -z $(pgrep -f -- "$dir/") ]] || fail "a process of a is left"
}

# A rebuild replaces the initrd a pool VM booted from: that VM is never
# handed out (a new boots cold), and the refill replaces it with one a
# fill keeps. vmux here is
# a copy beside a guest directory of its own, whose initrd can change.
t_replaced_image_is_not_handed_out() {
	local inst=$TMP/inst f any old
	mkdir -p "$inst/bin" "$inst/guest"
	cp "$VMUX" "$inst/bin/vmux"
	for f in "$(dirname "$VMUX")"/vmux-{bridge,console,fsd,netguard.so}; do
		[[ -e $f ]] && cp "$f" "$inst/bin/"
	done
	any=$(ls "$VMUX_HOME"/pool/*/session.json | head -1)
	ln -s "$(jq -r .kernel "$any")" "$inst/guest/vmlinux"
	cp "$(jq -r .initrd "$any")" "$inst/guest/initrd.img"
	echo "pool 1" >"$CONF"
	# the pool's VMs booted other files than this vmux would: replaced
	"$inst/bin/vmux" pool fill 2>/dev/null || return 1
	old=$(pool_ids)
	expect_eq "one, of the copy's initrd" "$(jq -r .initrd "$VMUX_HOME/pool/$old/session.json")" "$inst/guest/initrd.img" || return 1
	cp "$inst/guest/initrd.img" "$inst/guest/initrd.new"
	mv -f "$inst/guest/initrd.new" "$inst/guest/initrd.img"
	"$inst/bin/vmux" new r1 >/dev/null || return 1
	expect_match "cold after the rebuild" "$(session_field r1 dir)" "/sessions/r1\$" || return 1
	wait_for 180 eval '[[ $(pool_ready) == 1 && $(pool_ids) != "$old" ]]' ||
		fail "the stale VM was not replaced: $(vmux pool ls)" || return 1
	vmux rm r1 >/dev/null || return 1
	# the new one matches what a new here asks for: a fill keeps it
	local ids err
	ids=$(pool_ids)
	"$inst/bin/vmux" pool fill 2>/dev/null || return 1
	expect_eq "kept by the next fill" "$(pool_ids)" "$ids" || return 1
	# a fill that could not boot (the initrd gone) keeps what there is
	mv "$inst/guest/initrd.img" "$inst/guest/initrd.away"
	err=$("$inst/bin/vmux" pool fill 2>&1)
	expect_eq "fill without an initrd: status" $? 125 || return 1
	expect_match "says why" "$err" "cannot fill the pool: no guest image found" || return 1
	expect_eq "the pool kept" "$(pool_ids)" "$ids" || return 1
	mv "$inst/guest/initrd.away" "$inst/guest/initrd.img"
}

# An image the pool boots, imported again under its name: the pool's VMs
# of the old one are not handed out (a new boots cold, on the new image)
# and the next fill replaces them.
t_reimported_image_is_noticed() {
	local root=$TMP/root old
	mkdir -p "$root/bin" "$root/etc" "$VMUX_HOME/images"
	cp "$(command -v busybox)" "$root/bin/busybox"
	for c in sh cat hostname; do ln -s busybox "$root/bin/$c"; done
	mk_image() {
		echo "$1" >"$root/etc/vmux-test"
		truncate -s 32M "$TMP/new.img" &&
			PATH=$PATH:/sbin:/usr/sbin mkfs.ext4 -q -F -d "$root" "$TMP/new.img" &&
			mv -f "$TMP/new.img" "$VMUX_HOME/images/pimg.img"
	}
	mk_image first || return 1
	echo "pool 1 image pimg" >"$CONF"
	vmux pool fill 2>/dev/null || return 1
	old=$(pool_ids)
	mk_image second || return 1 # imported again, same name
	vmux new ri --image pimg >/dev/null || return 1
	expect_match "cold" "$(session_field ri dir)" "/sessions/ri\$" || return 1
	expect_eq "the new image" "$(vmux exec ri -- cat /etc/vmux-test)" second || return 1
	wait_for 180 eval '[[ $(pool_ready) == 1 && $(pool_ids) != "$old" ]]' ||
		fail "the old image's VM was not replaced: $(vmux pool ls)" || return 1
	vmux rm -f ri >/dev/null
	echo "pool 2" >"$CONF"
}

t_drain_stops_the_pool() {
	local id ids
	ids=$(vmux pool ls --json | jq -r '.vms[].id')
	[[ -n $ids ]] || { fail "an empty pool to drain"; return 1; }
	echo "pool 0" >"$CONF"
	vmux pool drain >/dev/null || return 1
	expect_eq "none" "$(vmux pool ls --json | jq '.vms | length')" 0 || return 1
	for id in $ids; do
		[[ -z $(pgrep -f -- "$VMUX_HOME/pool/$id/") ]] || fail "$id's processes left"
	done
	# the claimed ones are sessions now, untouched
	expect_eq "b" "$(session_field b state)" running || return 1
}

check "pool fill boots VMs that ls does not list" t_fill_boots_hidden_vms
check "vmux new claims a clean pool VM, the pool refills" t_new_claims_a_clean_vm
check "two vmux new at once get two VMs; a taken name fails" t_two_at_once_get_two
check "a request the pool cannot meet boots cold" t_other_requests_boot_cold
check "a pool VM that died, or whose claimer died, is replaced; a claim under way is not" t_dead_pool_vm_is_replaced
check "rm removes a claimed VM whole" t_rm_removes_a_claimed_vm_whole
check "a pool VM of a replaced initrd is never handed out, and is replaced" t_replaced_image_is_not_handed_out
check "an image imported again under its name: not handed out, replaced" t_reimported_image_is_noticed
check "drain stops the pool, claimed VMs stay" t_drain_stops_the_pool
