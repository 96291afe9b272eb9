#!/usr/bin/env bash
# 95-status: vmux status (seed 002's observability): version, backend,
# profiles, sessions by state, resources; the ring of the last 50 errors,
# concurrent failures included.
source "$(dirname "$0")/lib.sh"

t_status_fields() {
	local j
	j=$(vmux status --json) || return 1
	expect_eq version "vmux $(jq -r .version <<<"$j")" "$(vmux --version)" || return 1
	expect_eq available "$(jq -r .backend.available <<<"$j")" true || return 1
	expect_match qemu "$(jq -r .backend.version <<<"$j")" '^QEMU emulator version [0-9]' || return 1
	expect_match accel "$(jq -r .backend.accel <<<"$j")" '^(tcg|kvm)$' || return 1
	expect_eq profiles "$(jq -r '[.profiles[].name] | join(" ")' <<<"$j")" \
		"default offline_readonly network_basic network_extended" || return 1
	expect_eq "default max timeout" "$(jq -r '.profiles[0].max_timeout_s' <<<"$j")" 120 || return 1
	expect_eq sessions "$(jq -r .sessions.total <<<"$j")" 0 || return 1
	expect_eq errors "$(jq -r .recent_error_count <<<"$j")" 0 || return 1
	(($(jq -r .resources.host_cpus <<<"$j") >= 1)) || fail "host_cpus" || return 1
	expect_match table "$(vmux status)" 'sessions: 0 ' || return 1
	# a machine without QEMU is reported, not a crash
	j=$(VMUX_QEMU=/nonexistent/qemu vmux status --json) || return 1
	expect_eq unavailable "$(jq -r .backend.available <<<"$j")" false
}

t_error_ring_keeps_last_50() {
	local j i
	for i in $(seq 0 59); do
		vmux exec "nosuch$i" -- true 2>/dev/null && return 1
	done
	j=$(vmux status --json) || return 1
	expect_eq count "$(jq -r .recent_error_count <<<"$j")" 50 || return 1
	expect_eq oldest "$(jq -r '.recent_errors[0].session' <<<"$j")" nosuch10 || return 1
	expect_eq newest "$(jq -r '.recent_errors[-1].session' <<<"$j")" nosuch59 || return 1
	expect_eq command "$(jq -r '.recent_errors[-1].command' <<<"$j")" exec || return 1
	expect_eq message "$(jq -r '.recent_errors[-1].message' <<<"$j")" "no session named 'nosuch59'" || return 1
	expect_match time "$(jq -r '.recent_errors[-1].time' <<<"$j")" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$' || return 1
	expect_match table "$(vmux status)" "nosuch59 +exec +no session named 'nosuch59'"
}

# A session name (argv as typed) holding a newline and an escape cannot
# forge a line of vmux's own in the table.
t_error_fields_printed_escaped() {
	local out
	vmux exec $'evil\nvmux: forged line\e[2J' -- true 2>/dev/null && return 1
	out=$(vmux status)
	[[ $out != *$'\nvmux: forged line'* ]] || fail "a forged line: $out" || return 1
	[[ $out != *$'\e'* ]] || fail "an escape reached the terminal" || return 1
	expect_match escaped "$out" 'evil\\x0avmux: forged line\\x1b\[2J'
}

# --accel kvm by name on a host without usable KVM is an error with the
# reason, never a silent TCG guest; where KVM works it is KVM.
t_explicit_kvm_is_kept_to() {
	local out
	if [[ $(vmux status --json | jq -r .backend.accel) == tcg ]]; then
		out=$(vmux new k1 --accel kvm 2>&1)
		expect_eq status $? 125 || return 1
		expect_match reason "$out" "--accel kvm: KVM is not usable on this host \\(.+\\)" || return 1
		[[ ! -e $VMUX_HOME/sessions/k1 ]] || fail "k1 left behind"
	else
		need_session k1 --accel kvm
		expect_eq accel "$(session_field k1 accel)" kvm || return 1
		vmux rm -f k1
	fi
}

t_concurrent_errors_all_kept() {
	local i
	for i in $(seq 1 20); do
		vmux stop "par$i" 2>/dev/null &
	done
	wait
	expect_eq "all 20 kept" "$(vmux status --json | jq '[.recent_errors[] | select(.session | startswith("par"))] | length')" 20 || return 1
	expect_eq "still 50" "$(vmux status --json | jq .recent_error_count)" 50
}

t_sessions_by_state() {
	local j
	need_session st
	j=$(vmux status --json)
	expect_eq running "$(jq -r .sessions.running <<<"$j")" 1 || return 1
	expect_eq active "$(jq -r .active_sessions <<<"$j")" 1 || return 1
	expect_eq cpus "$(jq -r .resources.cpus_in_use <<<"$j")" 1 || return 1
	vmux stop st || return 1
	j=$(vmux status --json)
	expect_eq stopped "$(jq -r .sessions.stopped <<<"$j")" 1 || return 1
	expect_eq "cpus after stop" "$(jq -r .resources.cpus_in_use <<<"$j")" 0 || return 1
	(($(jq -r .resources.workspace_host_bytes <<<"$j") > 0)) || fail "workspace bytes"
}

check "status: version, backend, profiles, resources; QEMU missing said" t_status_fields
check "error ring keeps the last 50 with time, session, command, message" t_error_ring_keeps_last_50
check "error fields print escaped: no forged line, no escape" t_error_fields_printed_escaped
check "--accel kvm without usable KVM: an error with the reason" t_explicit_kvm_is_kept_to
check "20 concurrent failures: all recorded, ring still 50" t_concurrent_errors_all_kept
check "sessions by state and resources in use" t_sessions_by_state
