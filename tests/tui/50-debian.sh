#!/usr/bin/env bash
# 50-debian: the Debian 12 image (make image-debian, built here if missing):
# it boots with vmux's kernel and agent, `vmux shell` gets a login bash with
# the terminal's TERM, and vim and htop work full-screen in a real terminal
# (a private tmux server).
source "$(dirname "$0")/../e2e/lib.sh"
source "$(dirname "$0")/tmux.sh"

deb_cleanup() {
	local rc=$?
	tui_tmux_kill
	(exit $rc)
	e2e_cleanup
}
trap deb_cleanup EXIT

wait_screen() { wait_on "${3:-main}" "$1" "${2:-20}"; }
type_line() { tm send-keys -t main -l -- "$1" && tm send-keys -t main Enter; }

if [[ ! -f $BUILD/images/debian-12.img ]]; then
	BUILD=$BUILD "$ROOT/scripts/image-debian" >"$TMP/image.log" 2>&1 || {
		echo "FAIL make image-debian"
		tail -n 20 "$TMP/image.log" | sed 's/^/    /'
		exit 1
	}
fi
need_session deb --image debian-12

t_debian_boots_with_vmux_agent() {
	local out
	expect_match images "$(vmux images)" $'\n''debian-12 ' || return 1
	out=$(vmux exec deb -- sh -c 'cut -d. -f1 /etc/debian_version; python3 -c "print(6*7)"; pwd; ip -V | cut -c1-2')
	expect_eq exec "$out" $'12\n42\n/workspace\nip'
}

t_login_bash_with_term() {
	tm new-session -d -s main -x 100 -y 30 "$VMUX shell deb" || return 1
	wait_screen 'root@deb:~# ?$' 30 || return 1
	type_line 'echo "sh=$0 term=$TERM"'
	wait_screen '^sh=-bash term=tmux-256color$'
}

t_vim_edits_a_file() {
	type_line 'vim -u NONE -N /workspace/v.txt'
	wait_screen '^~ *$' 20 || return 1
	wait_screen 'v\.txt' 5 || return 1
	tm send-keys -t main i && tm send-keys -t main -l 'hello from vim' &&
		tm send-keys -t main Escape && tm send-keys -t main -l ':wq' &&
		tm send-keys -t main Enter || return 1
	wait_screen 'root@deb:~# ?$' 20 || return 1
	expect_eq file "$(vmux exec deb -- cat /workspace/v.txt)" 'hello from vim'
}

t_htop_draws_and_quits() {
	type_line 'htop'
	wait_screen 'Tasks: [0-9]+' 30 || return 1
	wait_screen 'F10Quit' 10 || return 1
	tm send-keys -t main q || return 1
	wait_screen 'root@deb:~# ?$' 20 || return 1
	type_line 'exit'
}

check "debian-12 boots with vmux's kernel and agent; python3, ip" t_debian_boots_with_vmux_agent
check "vmux shell: login bash with the terminal's TERM" t_login_bash_with_term
check "vim edits a file in /workspace, full screen" t_vim_edits_a_file
check "htop draws and quits" t_htop_draws_and_quits
