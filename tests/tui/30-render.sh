#!/usr/bin/env bash
# 30-render: the TUI's terminal pane draws what tmux draws. For each byte
# stream, one tmux window runs `vmux tui --local-command 'cat STREAM'`
# (no sidebar: the pane is the window less the status line) and another,
# of the pane's size, runs `cat STREAM` in tmux itself. Once both show the
# stream's end marker, `capture-pane -e` of both (characters, attributes,
# colours) must be identical row for row. No guest: this is the pane code
# (libvterm + drawing) against tmux's own terminal emulation.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
VMUX=$BUILD/bin/vmux
TMP=$(mktemp -d)
SOCK=vmux-render-$$
COLS=70
ROWS=20 # the pane; the TUI's window is one row taller (status bar)
pass=0 failed=0

tm() { TMUX_TMPDIR=$TMP tmux -L "$SOCK" -f "$TMP/tmux.conf" "$@"; }
cleanup() {
	tm kill-server 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

cat >"$TMP/tmux.conf" <<'EOF'
set -g default-terminal tmux-256color
set -g status off
set -g escape-time 0
set -g history-limit 100
EOF
mkdir -p "$TMP/home/.config/vmux"
printf 'set sidebar off\n' >"$TMP/home/.config/vmux/vmux.conf"

# capture NAME: the pane's rows with escapes, trailing blanks cut.
capture() {
	tm capture-pane -p -e -t "$1" -S 0 -E $((ROWS - 1)) | sed 's/[[:space:]]*$//'
}

# wait_marker NAME MARKER: until MARKER shows in the pane (10 s).
wait_marker() {
	local deadline=$((SECONDS + 20))
	until tm capture-pane -p -t "$1" | grep -qF -- "$2"; do
		((SECONDS < deadline)) || return 1
		sleep 0.05
	done
}

# compare NAME PRINTF-ARGS...: write the stream, render it both ways. With
# REF set, tmux is fed REF instead (what the stream must look like on a
# terminal with fewer colours).
compare() {
	local name=$1 marker="END-$1"
	shift
	{ printf "$@"; printf '\r\n%s' "$marker"; } >"$TMP/$name.bytes"
	cp "$TMP/$name.bytes" "$TMP/$name.ref-bytes"
	[[ -n ${REF:-} ]] && { printf "$REF"; printf '\r\n%s' "$marker"; } >"$TMP/$name.ref-bytes"
	tm new-window -d -t render -n "ref-$name" -- \
		sh -c "stty -onlcr; cat '$TMP/$name.ref-bytes'; exec sleep 600"
	tm resize-window -t "render:ref-$name" -x $COLS -y $ROWS
	tm new-window -d -t render -n "tui-$name" -- \
		env -i PATH=/usr/bin:/bin HOME="$TMP/home" TERM=tmux-256color \
		LANG=C.UTF-8 "$VMUX" tui --local-command \
		"stty -onlcr; cat '$TMP/$name.bytes'; exec sleep 600"
	tm resize-window -t "render:tui-$name" -x $COLS -y $((ROWS + 1))
	if ! wait_marker "render:ref-$name" "$marker" ||
		! wait_marker "render:tui-$name" "$marker"; then
		echo "not ok $name: the marker never showed"
		tm capture-pane -p -t "render:tui-$name" | sed 's/^/  tui | /'
		failed=$((failed + 1))
		return
	fi
	# DEC line drawing: tmux keeps the VT100 charset (SO ... SI around
	# ASCII letters), the TUI draws the same glyphs as Unicode
	capture "render:ref-$name" | perl -0777 -CS -pe '
		my %acs = (j=>"\x{2518}", k=>"\x{2510}", l=>"\x{250c}",
		    m=>"\x{2514}", n=>"\x{253c}", q=>"\x{2500}", t=>"\x{251c}",
		    u=>"\x{2524}", v=>"\x{2534}", w=>"\x{252c}", x=>"\x{2502}");
		s/\x0e([^\x0f]*)\x0f?/join "", map { $acs{$_} \/\/ $_ } split \/\/, $1/ge' \
		>"$TMP/$name.ref"
	capture "render:tui-$name" >"$TMP/$name.tui"
	if cmp -s "$TMP/$name.ref" "$TMP/$name.tui"; then
		echo "ok   $name"
		pass=$((pass + 1))
	else
		echo "not ok $name: the TUI's pane differs from tmux's"
		diff "$TMP/$name.ref" "$TMP/$name.tui" | cat -v | head -20 |
			sed 's/^/  /'
		failed=$((failed + 1))
	fi
	tm kill-window -t "render:ref-$name"
	tm kill-window -t "render:tui-$name"
}

tm new-session -d -s render -x $COLS -y $((ROWS + 1)) -- sleep 3600

long=$(printf 'word%.0s ' $(seq 1 60))
compare wrap '%s\r\nshort\r\n%s' "$long" "$(printf 'x%.0s' $(seq 1 150))"
compare sgr '\033[1mbold\033[0m \033[4munder\033[0m \033[7mrev\033[0m \033[3mital\033[0m\r\n\033[31mred\033[32mgreen\033[44mblue-bg\033[0m \033[91mbright\033[0m\r\n\033[38;5;208morange\033[48;5;22mgreen-bg\033[0m \033[1;33;41mmix\033[0m\r\n\033[39;49mdefault\r\n'
# SGR 2 (faint) as tmux draws it; a colour's own 2 is not faint
compare dim '\033[2mdim\033[22m normal \033[1;2mbolddim\033[0m \033[38;5;22mgreen\033[0m \033[2;38;5;22mdimgreen\033[0m\r\n'
# SGR 9 (strikethrough) through terminfo's smxx, as tmux draws it (ncurses
# has no attribute for it: tui/strike.c); struck cells overwritten plain,
# struck lines scrolled up the screen
compare strike 'a \033[9mstruck\033[29m plain \033[1;9;31mbsr\033[0m \033[9;44mbg\033[0m end\r\n\033[9mstruck line, partly overwritten\033[0m\r\033[6Cplain\r\n%s' "$(for i in $(seq 1 30); do printf '\033[9m%d struck\033[0m %d plain\r\n' "$i" "$i"; done)"
# tmux-256color has no direct colour: RGB shows as the nearest of 256
REF='\033[38;5;196mred\033[38;5;21mblue\033[48;5;28mgbg\033[0m\r\n' \
	compare truecolor '\033[38;2;255;0;0mred\033[38;2;0;0;255mblue\033[48;2;0;128;0mgbg\033[0m\r\n'
compare cursor 'line1\r\nline2\r\nline3\033[2;3HX\033[5;10HY\033[1;1H\033[2CZ\033[10;1H\033[3Aup\033[B\033[5Cfwd\r\n'
compare erase 'aaaaaaaaaa\r\nbbbbbbbbbb\r\ncccccccccc\033[2;5H\033[K\033[1;5H\033[1K\033[3;3H\033[2K\033[5;1Hdddddddddd\033[5;4H\033[X\033[10;1H'
compare insdel 'abcdef\r\n123456\r\nline3\r\nline4\033[1;3H\033[2@\033[2;2H\033[2P\033[3;1H\033[L\033[1;1H\033[M\033[8;1H'
compare scrollregion '1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n7\r\n8\033[3;6r\033[6;1H\r\nA\r\nB\r\nC\033[r\033[12;1H'
compare altscreen 'main-screen\r\n\033[?1049h\033[2J\033[Halternate\r\nstuff\033[?1049lback\r\n'
compare linedraw '\033(0lqqqk\r\nx  x\r\nmqqqj\033(B\r\nnormal\r\n'
# G1 as DEC graphics, shifted in and out with SO and SI (vttest's screen
# features draws its line so)
compare sosi 'a\033)0\016lqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqk\017b\r\n\016x\017 mid \016x\017\r\nplain q\r\n'
# DECRC restores the character sets DECSC saved (vttest's save/restore
# screen; libvterm 0.1.4 forgets them, tui/faint.c puts them back)
compare decsc '\033(0lqq\0337\033(Bab\033[3;1Hplain\0338qqk\r\n\033(B\033)0\016x\0337\017y\0338x\017\r\n'
# DECCOLM clears and homes even at the same width (libvterm 0.1.4
# ignores it; vttest relies on it)
compare deccolm 'old\r\nlines\033[5;5Hx\033[?3lnew\r\nnext\r\n'
compare wide 'wide: \344\270\255\346\226\207 \360\237\230\200 end\r\ncombining: e\314\201 a\314\210 o\314\202\r\n'
compare wideedge "$(printf 'x%.0s' $(seq 1 $((COLS - 1))))\344\270\255after\r\n"
compare flood '%s' "$(seq 1 20000 | tr '\n' ' ' | fold -w 200 | sed 's/$/\r/')"

echo "render: $pass passed, $failed failed"
((failed == 0))
