# sshd.sh: a real sshd (Debian's openssh-server) for a test, on a loopback
# port, with a throwaway host key and the test's own authorized_keys, all
# in $TMP (sourced after lib.sh). sshd_start sets PORT, or fails the file.
mkdir -p /run/sshd

# sshd_start AUTHORIZED_KEYS: start it; the pid is killed when the file ends.
sshd_start() {
	local ak=$1 try port pid
	ssh-keygen -q -t ed25519 -N '' -f "$TMP/hostkey" </dev/null ||
		{ echo "FAIL host key"; exit 1; }
	PORT=
	for try in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 30000))
		cat >"$TMP/sshd_config" <<EOC
Port $port
ListenAddress 127.0.0.1
HostKey $TMP/hostkey
AuthorizedKeysFile $ak
PidFile $TMP/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
MaxStartups 100
MaxSessions 100
LogLevel INFO
EOC
		/usr/sbin/sshd -D -f "$TMP/sshd_config" -E "$TMP/sshd.log" &
		pid=$!
		bg_track $pid
		if wait_for 10 grep -qs 'Server listening' "$TMP/sshd.log"; then
			PORT=$port
			return 0
		fi
		kill $pid 2>/dev/null
	done
	echo "FAIL sshd did not start: $(tail -3 "$TMP/sshd.log")"
	exit 1
}
