#!/usr/bin/env bash
# 60-cp: `vmux cp` both ways against a real guest (files, trees, docker cp
# destination rules, 16 MiB, modes, links, errors) and hostile archives sent
# raw to extract_archive, which must write nothing outside the destination.
source "$(dirname "$0")/lib.sh"
need_session cp
UDS=$(session_field cp vsock_uds)
W=$TMP/work
mkdir -p "$W"

# gsh CMD: run a shell command in the guest.
gsh() { vmux exec cp -- sh -c "$1"; }

# tree_sums DIR: "md5  path" of every file under DIR, sorted (host).
tree_sums() { (cd "$1" && find . -type f | sort | xargs md5sum); }

# gtree_sums DIR: the same in the guest.
gtree_sums() { gsh "cd '$1' && find . -type f | sort | xargs md5sum"; }

# A small tree: nested dirs, an empty file, an executable, a relative link.
mk_tree() {
	mkdir -p "$1/sub/deeper" "$1/empty-dir"
	echo "alpha" >"$1/a.txt"
	printf 'b\0inary\n' >"$1/sub/b.bin"
	: >"$1/sub/empty"
	head -c 100000 /dev/urandom >"$1/sub/deeper/rand"
	printf '#!/bin/sh\necho run\n' >"$1/run.sh"
	chmod 755 "$1/run.sh"
	ln -s a.txt "$1/link-to-a"
}
mk_tree "$W/tree"
echo "hello file" >"$W/f.txt"

t_file_into_dir() {
	vmux cp "$W/f.txt" cp:/tmp/ || return 1
	expect_eq content "$(gsh 'cat /tmp/f.txt')" "hello file"
}
t_file_new_name() {
	vmux cp "$W/f.txt" cp:/tmp/g.txt || return 1
	expect_eq content "$(gsh 'cat /tmp/g.txt')" "hello file"
}
t_file_overwrites() {
	echo "second version" >"$W/f2.txt"
	vmux cp "$W/f2.txt" cp:/tmp/g.txt || return 1
	expect_eq content "$(gsh 'cat /tmp/g.txt')" "second version"
}
t_dir_into_dir() {
	gsh 'mkdir -p /tmp/into' || return 1
	vmux cp "$W/tree" cp:/tmp/into || return 1
	expect_eq sums "$(gtree_sums /tmp/into/tree)" "$(tree_sums "$W/tree")" || return 1
	expect_eq link "$(gsh 'readlink /tmp/into/tree/link-to-a')" a.txt || return 1
	expect_eq mode "$(gsh 'stat -c %a /tmp/into/tree/run.sh')" 755 || return 1
	expect_eq "empty dir" "$(gsh 'test -d /tmp/into/tree/empty-dir && echo yes')" yes
}
t_dir_new_name() {
	vmux cp "$W/tree" cp:/tmp/newname || return 1
	expect_eq sums "$(gtree_sums /tmp/newname)" "$(tree_sums "$W/tree")" || return 1
	expect_eq "no nesting" "$(gsh 'test -e /tmp/newname/tree && echo nested || echo flat')" flat
}
t_guest_file_to_dot() {
	(cd "$W" && vmux cp cp:/etc/hostname .) || return 1
	expect_eq content "$(cat "$W/hostname")" "$(gsh 'cat /etc/hostname')"
}
t_guest_file_new_name() {
	vmux cp cp:/tmp/f.txt "$W/back.txt" || return 1
	expect_eq content "$(cat "$W/back.txt")" "hello file"
}
t_guest_dir_both_ways() {
	mkdir -p "$W/down"
	vmux cp cp:/tmp/newname "$W/down" || return 1
	expect_eq sums "$(tree_sums "$W/down/newname")" "$(tree_sums "$W/tree")" || return 1
	vmux cp cp:/tmp/newname "$W/down-renamed" || return 1
	expect_eq sums "$(tree_sums "$W/down-renamed")" "$(tree_sums "$W/tree")" || return 1
	expect_eq link "$(readlink "$W/down-renamed/link-to-a")" a.txt || return 1
	[[ -x $W/down-renamed/run.sh ]] || fail "mode lost"
}
t_big_file_both_ways() {
	local sum done total
	head -c $((16 << 20)) /dev/urandom >"$W/big"
	sum=$(md5sum <"$W/big" | cut -d' ' -f1)
	vmux cp "$W/big" cp:/tmp/big 2>"$TMP/err" || return 1
	[[ ! -s $TMP/err ]] || fail "stderr not a tty but got: $(cat "$TMP/err")" || return 1
	expect_eq "guest sum" "$(gsh 'md5sum < /tmp/big' | cut -d' ' -f1)" "$sum" || return 1
	vmux cp cp:/tmp/big "$W/big.back" || return 1
	expect_eq "host sum" "$(md5sum <"$W/big.back" | cut -d' ' -f1)" "$sum" || return 1
	# --progress-lines without a terminal: lines for a program, no escapes
	vmux cp --progress-lines "$W/big" cp:/tmp/big2 2>"$TMP/err" || return 1
	! grep -q $'\e' "$TMP/err" || fail "escapes: $(od -c "$TMP/err" | head -n 3)" || return 1
	grep -Eq '^vmux-progress [0-9]+ [0-9]+$' "$TMP/err" || fail "no lines: $(cat "$TMP/err")" || return 1
	read -r _ done total < <(tail -n 1 "$TMP/err")
	expect_eq "last line: all of it" "$done" "$total" || return 1
	vmux cp --progress-lines cp:/tmp/big2 "$W/big.2" 2>"$TMP/err" || return 1
	grep -Eq '^vmux-progress [0-9]+ [0-9]+$' "$TMP/err" || fail "download: no lines: $(cat "$TMP/err")"
}
t_progress_on_a_tty() {
	# stderr on a terminal: the progress line with bytes and rate
	script -qec "$VMUX cp cp:/tmp/big $W/big.tty" /dev/null >"$TMP/tty.out" 2>&1 || return 1
	grep -q 'download .*16.0 MiB.*/s' "$TMP/tty.out" || fail "no progress: $(cat -v "$TMP/tty.out")"
}
t_absolute_link_skipped() {
	mkdir -p "$W/abs"
	echo x >"$W/abs/file"
	ln -s /etc/passwd "$W/abs/abs-link"
	vmux cp "$W/abs" cp:/tmp/abs 2>"$TMP/err" || return 1
	grep -q 'skipped 1 entries' "$TMP/err" || fail "no warning: $(cat "$TMP/err")" || return 1
	expect_eq file "$(gsh 'cat /tmp/abs/file')" x || return 1
	expect_eq link "$(gsh 'test -L /tmp/abs/abs-link && echo there || echo skipped')" skipped
}

t_err_missing_source() {
	local err
	err=$(vmux cp "$W/nope" cp:/tmp/ 2>&1)
	expect_eq status $? 125 || return 1
	expect_match error "$err" 'nope.*No such file'
}
t_err_bad_session() {
	local err
	err=$(vmux cp "$W/f.txt" nosuch:/tmp/ 2>&1)
	expect_eq status $? 125 || return 1
	expect_match error "$err" "nosuch"
}
t_err_remote_missing() {
	local err
	err=$(vmux cp cp:/no/such/file "$W/" 2>&1)
	expect_eq status $? 125 || return 1
	expect_match error "$err" 'No such file'
	[[ ! -e $W/file ]] || fail "something was written"
}
t_err_remote_parent_missing() {
	local err
	err=$(vmux cp "$W/f.txt" cp:/no/such/dir/x 2>&1)
	expect_eq status $? 125 || return 1
	expect_match error "$err" 'parent is not a directory'
}
t_err_not_a_directory() {
	local err
	err=$(vmux cp cp:/etc/hostname/ "$W/" 2>&1)
	expect_eq status $? 125 || return 1
	expect_match error "$err" 'Not a directory' || return 1
	err=$(vmux cp "$W/f.txt" "$W/f.txt/" 2>&1)
	expect_eq "local-local status" $? 2 || return 1
	err=$(vmux cp cp:/etc/hostname "$W/missing-dir/" 2>&1)
	expect_eq status $? 125 || return 1
	expect_match error "$err" 'does not exist'
}
t_err_dir_over_file() {
	local err
	err=$(vmux cp cp:/tmp/newname "$W/f.txt" 2>&1)
	expect_eq status $? 125 || return 1
	expect_match error "$err" 'over file' || return 1
	expect_eq "file kept" "$(cat "$W/f.txt")" "hello file"
}
# docker cp refuses a host directory over a guest file; so does vmux
t_err_host_dir_over_guest_file() {
	local err
	gsh 'echo precious > /tmp/gfile' || return 1
	err=$(vmux cp "$W/tree" cp:/tmp/gfile 2>&1)
	expect_eq status $? 125 || return 1
	expect_match error "$err" "cannot replace non-directory 'gfile' with a directory" || return 1
	expect_eq "guest file kept" "$(gsh 'cat /tmp/gfile')" precious
}

# An upload cut short (here by a full guest disk: a 1 MiB tmpfs) lands
# nothing under the final name and keeps the file that was there; the
# temporary file goes too. (tests/unit's archive_cut_file_keeps_the_old_one
# cuts the stream at every point.)
t_cut_upload_keeps_the_old_file() {
	local err
	gsh 'mkdir -p /tmp/small && mount -t tmpfs -o size=1m tmpfs /tmp/small && echo old > /tmp/small/big' ||
		return 1
	head -c 4M /dev/urandom >"$TMP/big"
	err=$(vmux cp "$TMP/big" cp:/tmp/small/big 2>&1)
	expect_eq "cp status" $? 125 || return 1
	expect_match error "$err" 'No space left' || return 1
	expect_eq "old file kept" "$(gsh 'cat /tmp/small/big')" old || return 1
	expect_eq "nothing else" "$(gsh 'ls -a /tmp/small | tr "\n" " "')" ". .. big " || return 1
	gsh 'umount /tmp/small'
}

t_err_usage() {
	expect_status 2 vmux cp a b 2>/dev/null || return 1
	expect_status 2 vmux cp cp:/a cp:/b 2>/dev/null || return 1
	expect_status 2 vmux cp "$W/f.txt" cp:relative 2>/dev/null
}

# mktar OUT SPEC...: a hostile tar made with GNU tar (-P keeps '..' and
# '/', --transform renames): file:NAME, link:NAME:TARGET. Every file holds
# "pwned".
mktar() {
	local out=$1 d=$TMP/mktar spec name i=0 names=() xf=()
	shift
	rm -rf "$d"
	mkdir -p "$d"
	for spec in "$@"; do
		i=$((i + 1))
		name=${spec#*:}
		case $spec in
		file:*)
			echo pwned >"$d/m$i"
			;;
		link:*)
			ln -s "${name#*:}" "$d/m$i"
			name=${name%%:*}
			;;
		esac
		names+=("m$i")
		xf+=(--transform "s,^m$i\$,$name,")
	done
	tar -cf "$out" -P -C "$d" "${xf[@]}" "${names[@]}"
}

# extract_raw DEST FILE [EXTRA_JSON]: send FILE to extract_archive by hand.
extract_raw() {
	local n
	n=$(stat -c %s "$2")
	{
		printf 'CONNECT 5005\n{"action":"extract_archive","destination":"%s","archive_size":%d%s}\n' "$1" "$n" "${3:-}"
		cat "$2"
	} | socat -t 30 - UNIX-CONNECT:"$UDS" | tail -n 1
}

t_hostile_dotdot() {
	local r
	gsh 'mkdir -p /tmp/h1/a' || return 1
	mktar "$W/dotdot.tar" "file:ok.txt" "file:a/../../escape-dotdot.txt" 2>/dev/null || return 1
	r=$(extract_raw /tmp/h1/a "$W/dotdot.tar")
	[[ $(jq -r .error <<<"$r") == *..* ]] || fail "answer: $r" || return 1
	expect_eq outside "$(gsh 'ls /tmp/h1/escape-dotdot.txt /tmp/escape-dotdot.txt 2>/dev/null | wc -l')" 0
}
t_hostile_absolute() {
	local r
	mktar "$W/abs.tar" "file:/tmp/escape-abs.txt" 2>/dev/null || return 1
	r=$(extract_raw /tmp/h2 "$W/abs.tar")
	# GNU tar's rule: the leading '/' is stripped, so it lands inside
	expect_eq outside "$(gsh 'test -e /tmp/escape-abs.txt && echo ESCAPED || echo no')" no || return 1
	if [[ $(jq -r .error <<<"$r") == null ]]; then
		expect_eq inside "$(gsh 'cat /tmp/h2/tmp/escape-abs.txt')" pwned
	fi
}
t_hostile_symlink_then_file() {
	local r
	gsh 'mkdir -p /tmp/outside-dir' || return 1
	mktar "$W/sym.tar" "link:evil:/tmp/outside-dir" "file:evil/pwned.txt" || return 1
	r=$(extract_raw /tmp/h3 "$W/sym.tar")
	[[ $(jq -r .error <<<"$r") != null ]] || fail "answer: $r" || return 1
	expect_eq outside "$(gsh 'ls /tmp/outside-dir | wc -l')" 0 || return 1
	mktar "$W/sym2.tar" "link:evil:../../tmp/outside-dir" "file:evil/pwned.txt" || return 1
	r=$(extract_raw /tmp/h4 "$W/sym2.tar")
	[[ $(jq -r .error <<<"$r") != null ]] || fail "relative answer: $r" || return 1
	expect_eq outside "$(gsh 'ls /tmp/outside-dir | wc -l')" 0 || return 1
	# skipping unsafe links: the file lands in a real directory inside
	r=$(extract_raw /tmp/h5 "$W/sym.tar" ',"skip_unsafe_links":true')
	expect_eq skipped "$(jq -r .skipped <<<"$r")" 1 || return 1
	expect_eq outside "$(gsh 'ls /tmp/outside-dir | wc -l')" 0 || return 1
	expect_eq inside "$(gsh 'cat /tmp/h5/evil/pwned.txt')" pwned
}
t_hostile_combined() {
	local r
	mktar "$W/all.tar" "file:/tmp/escape-all-abs.txt" "link:evil:/tmp/outside-dir" \
		"file:evil/pwned-all.txt" "file:../escape-all-dotdot.txt" 2>/dev/null || return 1
	r=$(extract_raw /tmp/h8 "$W/all.tar")
	[[ $(jq -r .error <<<"$r") != null ]] || fail "answer: $r" || return 1
	expect_eq outside "$(gsh 'ls /tmp/escape-all-abs.txt /tmp/escape-all-dotdot.txt /tmp/outside-dir/pwned-all.txt 2>/dev/null | wc -l')" 0
}

t_short_and_junk_archives() {
	local r n
	tar cf "$W/plain.tar" -C "$W" f.txt || return 1
	n=$(stat -c %s "$W/plain.tar")
	r=$({
		printf 'CONNECT 5005\n{"action":"extract_archive","destination":"/tmp/h6","archive_size":%d}\n' $((n + 1000))
		cat "$W/plain.tar"
	} | socat -t 30 - UNIX-CONNECT:"$UDS" | tail -n 1)
	expect_match short "$r" '"error":"archive ended after' || return 1
	head -c 4096 /dev/urandom >"$W/junk"
	r=$(extract_raw /tmp/h7 "$W/junk")
	[[ $(jq -r .error <<<"$r") != null ]] || fail "junk answer: $r" || return 1
	r=$(printf 'CONNECT 5005\n{"action":"export_archive","path":"/no/such"}\n' | socat -t 30 - UNIX-CONNECT:"$UDS" | tail -n 1)
	expect_match export "$r" '"error":.*No such file'
}
t_agent_still_serves() {
	expect_eq exec "$(vmux exec cp -- echo fine)" fine
}

check "file into an existing guest dir" t_file_into_dir
check "file to a new guest name" t_file_new_name
check "file replaces an existing guest file" t_file_overwrites
check "dir into an existing guest dir (sums, link, mode)" t_dir_into_dir
check "dir to a new guest name gets its contents" t_dir_new_name
check "guest file into ." t_guest_file_to_dot
check "guest file to a new host name" t_guest_file_new_name
check "guest dir into a dir and to a new name" t_guest_dir_both_ways
check "16 MiB both ways, silent without a tty" t_big_file_both_ways
check "progress on a terminal" t_progress_on_a_tty
check "absolute links are skipped with a warning" t_absolute_link_skipped
check "missing host source" t_err_missing_source
check "unknown session" t_err_bad_session
check "missing guest path" t_err_remote_missing
check "missing guest parent" t_err_remote_parent_missing
check "not a directory" t_err_not_a_directory
check "a guest dir over a host file" t_err_dir_over_file
check "a host dir over a guest file is refused, the file kept" t_err_host_dir_over_guest_file
check "an upload cut short keeps the old file, leaves no part" t_cut_upload_keeps_the_old_file
check "usage errors exit 2" t_err_usage
check "hostile ../ entry: error, nothing outside" t_hostile_dotdot
check "hostile absolute entry: nothing outside" t_hostile_absolute
check "hostile symlink then file: error, nothing outside" t_hostile_symlink_then_file
check "one archive with all three: error, nothing outside" t_hostile_combined
check "short, junk and missing archives are errors" t_short_and_junk_archives
check "the agent still serves" t_agent_still_serves
