# sshd.sh: a real sshd (Debian's openssh-server) for a test, on a loopback
# port, with a throwaway host key and the test's own authorized_keys, all
# in $TMP (sourced after lib.sh). sshd_start sets PORT, or fails the file.
mkdir -p /run/sshd

# sshd_start AUTHORIZED_KEYS [TAG [PORT]]: start it (a second one with its
# own TAG; on PORT to start one again); SSHD_PID is its pid, killed when
# the file ends. With SSHD_HOME set, logins get that HOME, so the login
# shell reads none of the invoking user's dotfiles.
sshd_start() {
	local ak=$1 tag=${2:-} fixed=${3:-} try port pid
	[[ -f $TMP/hostkey ]] || ssh-keygen -q -t ed25519 -N '' -f "$TMP/hostkey" </dev/null ||
		{ echo "FAIL host key"; exit 1; }
	PORT=
	for try in 1 2 3 4 5; do
		port=${fixed:-$((20000 + RANDOM % 30000))}
		cat >"$TMP/sshd$tag.config" <<EOC
Port $port
ListenAddress 127.0.0.1
HostKey $TMP/hostkey
AuthorizedKeysFile $ak
PidFile $TMP/sshd$tag.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
MaxStartups 100
MaxSessions 100
LogLevel INFO
${SSHD_HOME:+SetEnv HOME=$SSHD_HOME}
EOC
		rm -f "$TMP/sshd$tag.log"
		/usr/sbin/sshd -D -f "$TMP/sshd$tag.config" -E "$TMP/sshd$tag.log" &
		pid=$!
		bg_track $pid
		if wait_for 10 grep -qs 'Server listening' "$TMP/sshd$tag.log"; then
			PORT=$port SSHD_PID=$pid
			return 0
		fi
		kill $pid 2>/dev/null
	done
	echo "FAIL sshd did not start: $(tail -3 "$TMP/sshd$tag.log")"
	exit 1
}
