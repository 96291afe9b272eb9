#!/usr/bin/env bash
# 37-console-shell: a way into guests that are broken, on real guests.
# vmux-init offers a root shell on the serial console (Enter opens it, it
# comes back when it ends): with the agent dead (an initrd whose agent
# exits at once), with a boot that never gets to a serving agent (an agent
# that hangs: vmux new is still waiting), and after the switch into an
# --image root. The shell has the console as its controlling terminal
# (Ctrl-C stops a command), reads no startup file of the workspace, and the
# console's socket is the owner's alone. vmux rescue reads nothing of the
# disk it rescues: a workspace whose .profile exits, aliases ls away or
# sets a PATH is looked at and fixed through piped input, then boots.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../tui/tmux.sh"
tui_trap

INITRD=$BUILD/guest/initrd.img

# broken_initrd NAME SCRIPT: vmux's initrd with its agent replaced by a
# shell script (the loader made unexecutable, so vmux-init runs the agent
# directly): a second cpio appended, whose files replace the first's. The
# boot must show the agent replaced, or the checks below prove nothing.
# Appended to the first decompressed: LZ4's legacy framing (the default
# image's) has no end, so the kernel would read a cpio after it as a chunk.
broken_initrd() {
	local d=$TMP/$1
	mkdir -p "$d/vmux/bin" "$d/vmux/lib"
	printf '#!/bin/sh\n%s\n' "$2" >"$d/vmux/bin/vmux-agent"
	chmod 755 "$d/vmux/bin/vmux-agent"
	echo none >"$d/vmux/lib/ld-linux-x86-64.so.2"
	chmod 644 "$d/vmux/lib/ld-linux-x86-64.so.2"
	(cd "$d" && find vmux | cpio -o -H newc --quiet) >"$d.cpio" || return 1
	# the kernel looks for the next archive at a 4-byte boundary (zeros
	# between archives are skipped)
	local size pad
	case $(od -An -tx1 -N2 "$INITRD" | tr -d ' ') in
	1f8b) gzip -dc "$INITRD" >"$d.first" ;;
	0221) lz4 -dc "$INITRD" >"$d.first" ;;
	*) cp "$INITRD" "$d.first" ;;
	esac || return 1
	size=$(stat -c %s "$d.first")
	pad=$(((4 - size % 4) % 4))
	{ cat "$d.first"; head -c "$pad" /dev/zero; cat "$d.cpio"; } >"$d.img"
}
broken_initrd dead 'echo fake agent ending; exit 1' || { echo "FAIL initrd"; exit 1; }
broken_initrd hang 'exec sleep 100000' || { echo "FAIL initrd"; exit 1; }

# console_shell WIN NAME: attach WIN to NAME's console and open the shell.
console_shell() {
	tm new-session -d -s "$1" -x 120 -y 40 "$VMUX console $2; sleep 600"
	wait_on "$1" "console of $2; detach with" 20 || return 1
	# (read from the log: a restarting agent may scroll it off the screen)
	wait_for 60 sh -c "'$VMUX' logs $2 | grep -q 'vmux-init: console: press Enter for a root shell'" ||
		fail "no shell offered: $(vmux logs "$2" | tail -n 5)" || return 1
	tm send-keys -t "$1" Enter
	wait_on "$1" '^/ #' 30
}

t_agent_dead() {
	local sock
	need_session bd-dead --memory 128 --no-agent --initrd "$TMP/dead.img"
	console_shell w1 bd-dead || return 1
	grep -q 'fake agent ending' "$(session_field bd-dead dir)/console.log" ||
		fail "the appended cpio did not replace the agent" || return 1
	# the agent is dead and restarted over and over; the shell answers
	wait_on w1 'vmux-init: agent \(pid [0-9]+\) exited 1' 30 || return 1
	type_line 'echo sum-$((6*7)); tty' w1
	wait_on w1 '^sum-42' 30 || return 1
	wait_on w1 '^/dev/ttyS0' 10 || return 1
	# a controlling terminal: Ctrl-C stops the foreground command
	type_line 'sh -c "echo sleep-\$((2+3)); exec sleep 1000"' w1
	wait_on w1 '^sleep-5' 30 || return 1
	tm send-keys -t w1 C-c
	type_line 'echo after-$((1+1))' w1
	wait_on w1 '^after-2' 30 || return 1
	# the shell that ends is offered again
	type_line 'exit 4' w1
	wait_on w1 'vmux-init: console: shell exited 4' 30 || return 1
	tm send-keys -t w1 Enter
	type_line 'echo again-$((3+3))' w1
	wait_on w1 '^again-6' 30 || return 1
	sock=$(session_field bd-dead dir)/console.sock
	# the owner's alone (a socket's x bit means nothing)
	expect_match "console socket mode" "$(stat -c %a "$sock")" '^[67]00$' || return 1
	expect_eq "session dir mode" "$(stat -c %a "$(session_field bd-dead dir)")" 700 || return 1
	tm send-keys -t w1 C-]
}

t_boot_hangs() {
	local new_pid
	# the agent never serves: vmux new waits, the console gives a shell
	"$VMUX" new bd-hang --memory 128 --boot-timeout 300 --initrd "$TMP/hang.img" >"$TMP/hang.out" 2>&1 &
	new_pid=$!
	bg_track $new_pid
	wait_for 60 test -S "$VMUX_HOME/sessions/bd-hang/console.sock" || return 1
	console_shell w2 bd-hang || return 1
	type_line 'ps -o pid,args | grep -c "[s]leep 100000"; echo up-$((2*5))' w2
	wait_on w2 '^up-10' 30 || return 1
	kill -0 $new_pid 2>/dev/null || fail "vmux new ended: $(cat "$TMP/hang.out")"
	tm send-keys -t w2 C-]
	kill $new_pid
	wait $new_pid 2>/dev/null
	return 0
}

t_image_root() {
	local root=$TMP/rootfs
	mkdir -p "$root/bin" "$root/etc"
	cp "$(command -v busybox)" "$root/bin/busybox"
	for c in sh ls cat echo ps; do ln -s busybox "$root/bin/$c"; done
	echo "image-marker" >"$root/etc/vmux-test"
	need_session bd-img --memory 128 --image "$root"
	console_shell w3 bd-img || return 1
	type_line 'cat /etc/vmux-test' w3
	wait_on w3 '^image-marker' 30 || return 1
	tm send-keys -t w3 C-]
}

t_console_skips_workspace_dotfiles() {
	need_session bd-ws --memory 128
	vmux exec bd-ws -- sh -c 'echo "exit 3" >/workspace/.profile; echo "exit 3" >/workspace/.shrc' || return 1
	console_shell w4 bd-ws || return 1
	type_line 'echo ws-$((4+4)) $HOME' w4
	wait_on w4 '^ws-8 /root' 30 || return 1
	tm send-keys -t w4 C-]
}

t_rescue_reads_nothing_of_the_disk() {
	local out
	need_session rp --memory 128
	vmux exec rp -- sh -c 'printf "exit 3\n" >/workspace/.profile' || return 1
	# the session's own shells are broken now
	out=$(printf 'echo unreachable-$((1+1))\n' | vmux shell rp 2>&1)
	[[ $out == *unreachable-2* ]] && fail "the .profile did not break rp's shell: $out"
	vmux stop rp >/dev/null || return 1
	out=$(printf 'pwd\necho home=$HOME\nls -a\n' | vmux rescue rp 2>&1)
	expect_match "working directory" "$out" $'\n/sysroot\r?\n' || return 1
	expect_match "HOME off the disk" "$out" 'home=/root' || return 1
	expect_match "the disk listed" "$out" '\.profile' || return 1
	# an alias and a PATH in the disk's dotfiles change nothing either
	printf 'printf "alias ls=true\\nPATH=/nowhere\\nexport PATH\\n" >/sysroot/.profile\n' |
		vmux rescue rp --rw >/dev/null 2>&1 || return 1
	out=$(printf 'ls /sysroot\necho path=$PATH\n' | vmux rescue rp 2>&1)
	expect_match "ls not aliased" "$out" 'lost\+found' || return 1
	[[ $out == *path=/nowhere* ]] && fail "the disk's PATH was read: $out"
	# fixed through piped input; the session's shells work again
	printf 'rm /sysroot/.profile\n' | vmux rescue rp --rw >/dev/null 2>&1 || return 1
	vmux start rp >/dev/null || return 1
	out=$(printf 'echo shell-$((2*3))\nexit\n' | vmux shell rp 2>&1)
	expect_match "the shell works" "$out" 'shell-6' || return 1
}

check "agent dead: Enter on the console opens a root shell with job control, again after exit" t_agent_dead
check "a boot whose agent never serves: the console gives a shell while new waits" t_boot_hangs
check "an --image root: the console shell runs in the image" t_image_root
check "the console shell reads no dotfile of the workspace" t_console_skips_workspace_dotfiles
check "rescue runs nothing of the disk (.profile exit, alias, PATH); fixed, the session's shells work" t_rescue_reads_nothing_of_the_disk
