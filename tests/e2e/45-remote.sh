#!/usr/bin/env bash
# 45-remote: vmux on another host over SSH. A real sshd (sshd.sh) on a
# loopback port serves a second vmux home on this machine, reached through
# a wrapper that gives it its own HOME and VMUX_HOME. Every command goes
# there with -H or HOST:NAME and answers as it would there: output, --json,
# exit statuses (a guest's 255 included); streams are byte-exact; cp both
# ways; a shell attached and detached through a terminal; ls over several
# hosts; a hostile host's answers made printable (ls over several hosts,
# the TUI) and capped; bad host strings, an unreachable host, a host
# without vmux and one with another version each get one clear error.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sshd.sh"
source "$(dirname "$0")/../tui/tmux.sh"
tui_trap

AK=$TMP/authorized_keys
ssh-keygen -q -t ed25519 -N '' -C client -f "$TMP/client" </dev/null || { echo "FAIL key"; exit 1; }
cp "$TMP/client.pub" "$AK"
# logins start in a HOME of the test's: no dotfile of the machine's user
SSHD_HOME=$TMP/login-home
mkdir -p "$SSHD_HOME"
sshd_start "$AK"
# the client's ssh: the test's key and nothing of the invoking user's
cat >"$TMP/ssh_config" <<EOC
Host *
	IdentityFile $TMP/client
	IdentitiesOnly yes
	StrictHostKeyChecking no
	UserKnownHostsFile /dev/null
	LogLevel ERROR
EOC
export VMUX_SSH_COMMAND="ssh -F $TMP/ssh_config"
# the other host's vmux: the same binary, its own home
RHOME=$VMUX_HOME/remote
mkdir -p "$RHOME/home"
cat >"$TMP/rvmux" <<EOC
#!/bin/sh
export HOME=$RHOME/home VMUX_HOME=$RHOME XDG_CONFIG_HOME=$RHOME/home/config
exec $VMUX "\$@"
EOC
printf '#!/bin/sh\necho "vmux 0.0-old"\n' >"$TMP/oldvmux"
# a hostile host: the right version, then answers with escape sequences
# (an OSC title, a clear, a C1 CSI) in every session name, or in its
# shells' commands and details (evil-fields), or 20 MB (evil-huge)
cat >"$TMP/evilvmux" <<'EOC'
#!/bin/sh
d=$(dirname "$0")
case " $* " in *" --version "*) exec "$d/rvmux" "$@" ;; esac
if [ -e "$d/evil-huge" ]; then head -c 20000000 /dev/zero | tr '\0' x; exit 0; fi
# evil-zeros: 16 MiB less a little of [0,0,...]: under the byte cap, 8M values
if [ -e "$d/evil-zeros" ]; then exec cat "$d/zeros.json"; fi
# evil-stderr: an OSC title and a clear on stderr, then the honest answer
if [ -e "$d/evil-stderr" ]; then printf 'look\033]0;pwned\007\033[2J here\n' >&2; fi
# evil-hang: never answers (its pid kept, so the test ends it)
if [ -e "$d/evil-hang" ]; then echo $$ >"$d/evil-hang.pid"; exec sleep 3600; fi
esc='\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m'
if [ -e "$d/evil-fields" ]; then
	"$d/rvmux" "$@" |
		sed 's|\("/bin/sh\)"|\1'"$esc"'"|g; s|\("default[^"]*\)"|\1'"$esc"'"|g'
else
	"$d/rvmux" "$@" | sed 's|"r1"|"r1'"$esc"'"|g'
fi
EOC
chmod +x "$TMP/rvmux" "$TMP/oldvmux" "$TMP/evilvmux"
USERAT=$(id -un)@127.0.0.1:$PORT
rvmux() { "$TMP/rvmux" "$@"; }

# whatever happens: the other home's sessions go, the ssh masters close
tui_before_exit() {
	local s
	for s in "$RHOME"/sessions/*/; do
		[[ -d $s ]] && rvmux rm -f "$(basename "$s")" >/dev/null 2>&1
	done
	for s in lab lab2 far evil; do vmux host disconnect $s >/dev/null 2>&1; done
}

t_hosts_named_in_settings() {
	vmux host add lab "ssh://$USERAT$TMP/rvmux" || return 1
	vmux host add lab2 "ssh://$USERAT$TMP/rvmux" || return 1
	vmux host add nohost "ssh://$USERAT/no/such/vmux" || return 1
	vmux host add old "ssh://$USERAT$TMP/oldvmux" || return 1
	vmux host add down "ssh://$(id -un)@127.0.0.1:1" || return 1
	local out
	out=$(vmux host ls) || return 1
	expect_match "ls" "$out" "lab +ssh://$USERAT$TMP/rvmux" || return 1
	expect_match "local default" "$out" 'local +\* +\(this machine\)' || return 1
	out=$(vmux host ls --json | jq -r '.[] | select(.name == "lab2") | .url')
	expect_eq "json" "$out" "ssh://$USERAT$TMP/rvmux" || return 1
	expect_status 125 vmux host add lab ssh://x@y || return 1
	out=$(vmux host check lab) || return 1
	expect_match "check" "$out" '^lab: ok' || return 1
	# an edit keeps what is there: a last line without its newline, the
	# file a symlink points to, the mode
	local cf=$XDG_CONFIG_HOME/vmux/config
	mv "$cf" "$TMP/real-config"
	ln -s "$TMP/real-config" "$cf"
	chmod 600 "$TMP/real-config"
	printf 'console-log-max 8M' >>"$TMP/real-config"
	vmux host add extra ssh://x@y || return 1
	[[ -L $cf ]] || fail "the symlink was replaced"
	expect_eq "mode" "$(stat -c %a "$TMP/real-config")" 600 || return 1
	expect_match "kept" "$(cat "$cf")" $'\nconsole-log-max 8M\nhost extra ssh://x@y\n?$' || return 1
	vmux host rm extra || return 1
	vmux ls >/dev/null || fail "the settings no longer read"
}

t_new_and_ls_run_there() {
	vmux -H lab new r1 --memory 128 >"$TMP/new.out" 2>&1 ||
		{ cat "$TMP/new.out"; return 1; }
	[[ -d $RHOME/sessions/r1 ]] || fail "r1 is not in the other home"
	[[ ! -e $VMUX_HOME/sessions/r1 ]] || fail "r1 is in this home"
	local here there
	here=$(vmux -H lab ls --json | jq -c '[.[] | {name, state, cid}]')
	there=$(rvmux ls --json | jq -c '[.[] | {name, state, cid}]')
	expect_eq "ls --json there" "$here" "$there" || return 1
	expect_match "running" "$here" '"name":"r1","state":"running"' || return 1
	# the same table as there, and VMUX_HOST does what -H does
	here=$(VMUX_HOST=lab vmux ls | cut -c1-40)
	there=$(rvmux ls | cut -c1-40)
	expect_eq "ls table" "$here" "$there" || return 1
}

t_remote_settings_do_not_send_it_on() {
	# the other side's own default host is not followed: -H local there
	mkdir -p "$RHOME/home/config/vmux"
	echo "host loop ssh://nobody@127.0.0.1:1" >"$RHOME/home/config/vmux/config"
	echo "default-host loop" >>"$RHOME/home/config/vmux/config"
	local out
	out=$(vmux -H lab ls --json | jq -r '.[0].name')
	rm -f "$RHOME/home/config/vmux/config"
	expect_eq "ls there" "$out" r1 || return 1
	# a command that reads no stdin leaves a script's input alone
	out=$(printf 'a\nb\nc\n' | while read -r w; do vmux -H lab ls >/dev/null; echo "$w"; done | tr -d '\n')
	expect_eq "stdin kept" "$out" abc || return 1
}

t_master_killed_is_replaced() {
	local ctl pid
	vmux -H lab ls >/dev/null || return 1
	pid=$(pgrep -f -- "ControlMaster=yes.*$VMUX_HOME/ssh/.* -- 127.0.0.1" | head -1)
	[[ -n $pid ]] || { fail "no master running"; return 1; }
	kill -9 "$pid"
	# its socket stays behind; the next command starts a new master
	expect_status 0 vmux -H lab ls >/dev/null || return 1
	expect_status 0 vmux -H lab ls >/dev/null || return 1
	# one master, not a master and a connection that shares nothing
	expect_eq "ssh -N running" "$(pgrep -fc -- "ssh .*$VMUX_HOME/ssh/.* -N ")" 1 || return 1
}

t_exec_streams_and_statuses() {
	local out err
	out=$(vmux exec lab:r1 -- sh -c 'echo out; echo err >&2; exit 7' 2>"$TMP/err")
	expect_status 7 vmux exec lab:r1 -- sh -c 'exit 7' || return 1
	expect_eq "stdout" "$out" out || return 1
	expect_eq "stderr" "$(cat "$TMP/err")" err || return 1
	# a guest's 255 is the guest's, not ssh's
	expect_status 255 vmux exec lab:r1 -- sh -c 'exit 255' || return 1
	expect_status 127 vmux exec lab:r1 -- no-such-command || return 1
	# bytes go both ways unchanged (every byte value, 1 MiB)
	head -c 1048576 /dev/urandom >"$TMP/blob"
	vmux exec -i lab:r1 -- cat <"$TMP/blob" >"$TMP/blob.back" || return 1
	cmp "$TMP/blob" "$TMP/blob.back" || fail "exec stream changed bytes"
	out=$(vmux -H lab exec r1 --json -- echo hi | jq -r '.stdout')
	expect_eq "--json" "$out" hi || return 1
	# an unknown session: the other side's error and status
	err=$(vmux exec lab:nosuch -- true 2>&1)
	expect_status 125 vmux exec lab:nosuch -- true || return 1
	expect_match "its error" "$err" "nosuch" || return 1
}

t_logs_stop_start_there() {
	local here there
	here=$(vmux logs lab:r1 | head -c 4000 | od -c | head -50)
	there=$(rvmux logs r1 | head -c 4000 | od -c | head -50)
	expect_eq "logs byte for byte" "$here" "$there" || return 1
	vmux -H lab stop r1 >/dev/null || return 1
	expect_eq "stopped there" "$(rvmux ls --json | jq -r '.[0].state')" stopped || return 1
	vmux start lab:r1 >/dev/null || return 1
	expect_eq "running there" "$(rvmux ls --json | jq -r '.[0].state')" running || return 1
}

t_cp_both_ways() {
	mkdir -p "$TMP/up/sub"
	head -c 300000 /dev/urandom >"$TMP/up/sub/data"
	echo hello >"$TMP/up/note"
	vmux cp "$TMP/up" lab:r1:/tmp/up >/dev/null || return 1
	local out
	out=$(vmux exec lab:r1 -- cat /tmp/up/note)
	expect_eq "uploaded" "$out" hello || return 1
	vmux -H lab cp r1:/tmp/up "$TMP/down" >/dev/null || return 1
	cmp "$TMP/up/sub/data" "$TMP/down/sub/data" || fail "download changed bytes"
	out=$(vmux -H lab cp r1:/tmp/up/note "$TMP/n2" --json | jq -r .direction)
	expect_eq "json" "$out" download || return 1
	# a copy refused there is an error here, nothing written
	expect_status 125 vmux cp lab:r1:/no/such "$TMP/none" 2>/dev/null || return 1
	[[ ! -e $TMP/none ]] || fail "a failed copy left $TMP/none"
}

t_shell_attach_and_detach() {
	tui_host_shell
	type_line "VMUX_SSH_COMMAND='$VMUX_SSH_COMMAND' XDG_CONFIG_HOME=$XDG_CONFIG_HOME $VMUX shell lab:r1"
	wait_on main '~ #$' 30 || return 1
	type_line 'echo remote-$((6*7))'
	wait_on main '^remote-42' 10 || return 1
	tm send-keys -t main C-]
	wait_on main '^host\$' 10 || return 1
	# the shell lives on there: attach again and see it
	out=$(vmux -H lab shells r1 --json | jq -r '.[0].state')
	expect_eq "shell state" "$out" running || return 1
}

t_several_hosts() {
	local out
	out=$(vmux -H lab -H lab2 -H local ls)
	expect_match "header" "$out" '^HOST +NAME +STATE' || return 1
	expect_match "lab" "$out" $'\n''lab +r1 +running' || return 1
	expect_match "lab2" "$out" $'\n''lab2 +r1 +running' || return 1
	out=$(vmux -H lab -H lab2 ls --json | jq -r '[.[] | .host + ":" + .name] | join(",")')
	expect_eq "json hosts" "$out" "lab:r1,lab2:r1" || return 1
	# one host down: the others are still listed, the status says so
	out=$(vmux -H lab -H down ls 2>"$TMP/err")
	expect_status 125 vmux -H lab -H down ls >/dev/null 2>&1 || return 1
	expect_match "lab listed" "$out" 'lab +r1' || return 1
	expect_match "down said" "$(cat "$TMP/err")" 'host down' || return 1
	expect_status 2 vmux -H lab -H lab2 exec r1 -- true 2>/dev/null || return 1
}

t_hostile_host_is_made_printable() {
	local out
	vmux host add evil "ssh://$USERAT$TMP/evilvmux" || return 1
	# its answer does carry the escapes (-H alone passes output on, as ssh)
	out=$(vmux -H evil ls --json | jq -r '.[0].name')
	expect_match "hostile answer" "$out" $'r1\e]0;pwned' || return 1
	# listed beside other hosts, every string is made printable
	out=$(vmux -H evil -H lab ls)
	expect_match "evil listed" "$out" $'\n''evil +r1' || return 1
	[[ $out != *$'\e'* && $out != *$'\a'* && $out != *$'\xc2\x9b'* ]] ||
		fail "raw escapes in ls over two hosts: $(printf %q "$out")" || return 1
	out=$(vmux -H evil -H lab ls --json | jq -r '.[] | select(.host == "evil") | .name')
	[[ $out != *$'\e'* ]] || fail "escapes in --json names: $(printf %q "$out")" || return 1
	# the TUI drops sessions whose names are not names; what it shows of
	# another host (commands, details) is printable: the title untouched
	touch "$TMP/evil-fields"
	tm new-session -d -s evil -x 150 -y 40 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME XDG_CONFIG_HOME=$XDG_CONFIG_HOME VMUX_SSH_COMMAND='$VMUX_SSH_COMMAND' $VMUX -H evil -H lab tui"
	wait_on evil '^ evil ' 30 || return 1
	wait_on evil '^  evil:r1' 30 || return 1
	wait_on evil 'default net:off 4G.x1b' 30 || return 1 # shown as text
	[[ $(tm display-message -p -t evil '#{pane_title}') != *pwned* ]] ||
		fail "the hostile host set the terminal's title" || return 1
	tm send-keys -t evil C-b d
	rm -f "$TMP/evil-fields"
	# an answer of 20 MB: refused at the cap, the other host still listed
	touch "$TMP/evil-huge"
	out=$(timeout 120 "$VMUX" -H evil -H lab ls 2>"$TMP/err")
	expect_match "lab still listed" "$out" 'lab +r1' || return 1
	expect_match "evil refused" "$(cat "$TMP/err")" 'evil' || return 1
	rm -f "$TMP/evil-huge"
	vmux host rm evil >/dev/null
}

t_hostile_host_bounded() {
	local out kib
	vmux host add evil "ssh://$USERAT$TMP/evilvmux" || return 1
	# what it says on stderr reaches the terminal made printable
	touch "$TMP/evil-stderr"
	out=$(vmux -H evil -H lab ls 2>&1)
	rm -f "$TMP/evil-stderr"
	expect_match "stderr said" "$out" 'vmux: host evil: look\\x1b\]0;pwned\\x07' || return 1
	[[ $out != *$'\e'* && $out != *$'\a'* ]] || fail "raw escapes from its stderr: $(printf %q "$out")" || return 1
	# 8 million values under the byte cap: refused before parsing, cheaply
	{ printf '['; head -c 8000000 /dev/zero | tr '\0' 0 | sed 's/0/0,/g'; printf '0]\n'; } >"$TMP/zeros.json"
	touch "$TMP/evil-zeros"
	/usr/bin/time -f %M -o "$TMP/zeros.kib" "$VMUX" -H evil -H lab ls >"$TMP/zeros.out" 2>"$TMP/zeros.err"
	expect_eq "status" $? 125 || return 1
	kib=$(tail -n 1 "$TMP/zeros.kib")
	expect_match "lab still listed" "$(cat "$TMP/zeros.out")" 'lab +r1' || return 1
	expect_match "said" "$(cat "$TMP/zeros.err")" 'host evil: its answer holds more than 500000 values' || return 1
	((kib < 100 * 1024)) || fail "peak RSS $kib KiB for a refused answer" || return 1
	echo "figure: ls of two hosts, one answering 8M values: peak RSS $kib KiB"
	# the TUI's fetch of another host is bounded the same way
	tm new-session -d -s evz -x 150 -y 40 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME XDG_CONFIG_HOME=$XDG_CONFIG_HOME VMUX_SSH_COMMAND='$VMUX_SSH_COMMAND' $VMUX -H evil -H lab tui"
	wait_on evz 'its answer holds more than' 60 || return 1
	wait_on evz '^  lab:r1' 30 || return 1
	tm send-keys -t evz C-b d
	rm -f "$TMP/evil-zeros"
	wait_for 30 eval '! pgrep -f -- "evilvmux .*--model-json" >/dev/null' ||
		fail "remote fetches left running" || return 1
	# a host that never answers: cut off at the deadline, the others listed
	touch "$TMP/evil-hang"
	out=$(timeout 60 "$VMUX" -H evil -H lab ls 2>"$TMP/hang.err")
	expect_eq "status" $? 125 || return 1
	rm -f "$TMP/evil-hang"
	expect_match "lab listed" "$out" 'lab +r1' || return 1
	expect_match "evil said" "$(cat "$TMP/hang.err")" 'host evil: no answer within 15 s' || return 1
	[[ -f $TMP/evil-hang.pid ]] && kill "$(cat "$TMP/evil-hang.pid")" 2>/dev/null
	vmux host disconnect evil >/dev/null 2>&1
	vmux host rm evil >/dev/null
}

t_percent_in_the_home() {
	local h="$TMP/pct%h%%x" out
	# ssh expands %-tokens in ControlPath: the socket must still be where
	# vmux looks, under this home
	mkdir -p "$h"
	out=$(VMUX_HOME=$h "$VMUX" -H lab ls --json | jq -r '.[0].name') || return 1
	expect_eq "listed" "$out" r1 || return 1
	[[ -n $(find "$h" -name 'm-*' -type s) ]] || fail "no control socket under $h: $(find "$TMP" -name 'm-*' -type s)" || return 1
	VMUX_HOME=$h "$VMUX" host disconnect lab >/dev/null 2>&1
	[[ -z $(find "$h" -name 'm-*' -type s) ]] || fail "the master under $h outlived disconnect"
}

t_bad_hosts_say_why() {
	local err
	err=$(vmux -H ftp://x ls 2>&1)
	expect_status 125 vmux -H ftp://x ls 2>/dev/null || return 1
	expect_match "not a host" "$err" "'ftp://x' is not a host" || return 1
	err=$(vmux -H nosuch ls 2>&1)
	expect_match "no name" "$err" "no host named 'nosuch'" || return 1
	err=$(vmux -H 'ssh://a;b@h' ls 2>&1)
	expect_match "bad chars" "$err" "invalid host" || return 1
	expect_status 2 vmux host add 'bad name' ssh://x@y 2>/dev/null || return 1
	expect_status 2 vmux host add local ssh://x@y 2>/dev/null || return 1
	err=$(vmux -H down ls 2>&1)
	expect_status 125 vmux -H down ls 2>/dev/null || return 1
	expect_match "unreachable" "$err" "cannot reach host down over ssh: .*refused" || return 1
	err=$(vmux -H down ls --json 2>/dev/null | jq -r .exit_code)
	expect_eq "json error" "$err" 125 || return 1
	err=$(vmux -H nohost ls 2>&1)
	expect_status 125 vmux -H nohost ls 2>/dev/null || return 1
	expect_match "no vmux" "$err" "host nohost has no vmux .*install vmux" || return 1
	err=$(vmux -H old ls 2>&1)
	expect_match "old vmux" "$err" "host old runs vmux 0.0-old, this is vmux .*same version" || return 1
	# a name on two hosts, a name on another host than -H
	expect_status 2 vmux -H lab2 exec lab:r1 -- true 2>/dev/null || return 1
}

t_tui_over_two_hosts() {
	local port2
	sshd_start "$AK" 2 || return 1
	port2=$PORT
	vmux host add far "ssh://$(id -un)@127.0.0.1:$port2$TMP/rvmux" || return 1
	tm new-session -d -s tui -x 150 -y 40 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME XDG_CONFIG_HOME=$XDG_CONFIG_HOME VMUX_SSH_COMMAND='$VMUX_SSH_COMMAND' $VMUX -H lab -H far tui lab:r1"
	# the sidebar: a heading a host, HOST:NAME rows
	wait_on tui '^ lab ' 30 || return 1
	wait_on tui '^ far ' 30 || return 1
	wait_on tui '> lab:r1 ' 30 || return 1
	wait_on tui '^  far:r1 ' 30 || return 1
	# the pane is lab's r1 shell, through ssh
	wait_on tui '~ #' 30 || return 1
	type_line 'echo tui-$((5*5))' tui
	wait_on tui 'tui-25' 20 || return 1
	# the wall tiles both hosts' sessions, live
	tm send-keys -t tui C-b w
	wait_on tui 'far:r1:[a-z0-9-]+ live' 30 || return 1
	wait_on tui 'lab:r1:[a-z0-9-]+ live' 30 || return 1
	tm send-keys -t tui Escape
	# far goes away: said on its heading, lab's pane goes on
	kill "$SSHD_PID"
	vmux host disconnect far >/dev/null
	wait_on tui '^ far: ' 40 || return 1
	type_line 'echo still-$((2*3))' tui
	wait_on tui 'still-6' 20 || return 1
	# far comes back on its port: it reconnects by itself
	sshd_start "$AK" 2 "$port2" || return 1
	wait_on tui '^ far  ' 40 || return 1
	tm send-keys -t tui C-b d
	# what the TUI was asking the hosts ends with it
	wait_for 30 eval '! pgrep -f -- "rvmux. .tui. .--model-json" >/dev/null' ||
		fail "remote fetches left running"
}

t_default_host_and_rm() {
	vmux host default lab || return 1
	local out
	out=$(vmux ls --json | jq -r '.[0].name')
	expect_eq "default host" "$out" r1 || return 1
	out=$(vmux -H local ls --json | jq length)
	expect_eq "local still here" "$out" 0 || return 1
	vmux rm -f r1 >/dev/null || return 1
	[[ ! -d $RHOME/sessions/r1 ]] || fail "r1 still there"
	vmux host default local || return 1
	vmux host rm lab2 || return 1
	out=$(vmux host ls --json | jq -r '[.[].name] | join(",")')
	expect_eq "after rm" "$out" "lab,nohost,old,down,far" || return 1
}

check "hosts are named in the settings: add, ls, check" t_hosts_named_in_settings
check "new and ls run on the other host (-H, VMUX_HOST)" t_new_and_ls_run_there
check "the other side's settings never send a command on" t_remote_settings_do_not_send_it_on
check "a master killed with -9 is replaced, nothing unshared left" t_master_killed_is_replaced
check "exec over ssh: streams byte-exact, statuses kept" t_exec_streams_and_statuses
check "logs, stop and start on the other host" t_logs_stop_start_there
check "cp both ways with a remote session" t_cp_both_ways
check "vmux shell HOST:NAME attaches and detaches" t_shell_attach_and_detach
check "ls over several hosts, one of them down" t_several_hosts
check "a hostile host's answers are made printable and capped" t_hostile_host_is_made_printable
check "a hostile host: stderr made printable, values bounded (ls, TUI), a deadline" t_hostile_host_bounded
check "a '%' in VMUX_HOME: the ssh master's socket is where vmux looks" t_percent_in_the_home
check "bad, unreachable, vmux-less and old hosts say why" t_bad_hosts_say_why
check "one TUI over two hosts, one of them stopped mid-run" t_tui_over_two_hosts
check "a default host; rm there; host rm" t_default_host_and_rm
