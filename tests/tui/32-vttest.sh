#!/usr/bin/env bash
# 32-vttest: vttest (Debian's package) in the TUI's pane and in a tmux pane,
# both 80x24 (`vttest 24x80.80`), menus 1, 2, 3 and 8 and the screens of
# 11.5 and 11.7 walked with the same keys; every screen of the TUI must
# equal tmux's (capture-pane -e: characters, attributes, colours, read as
# cells). Where tmux departs from the VT100 (vttest's own text says what
# the screen should show) the wanted screen is the VT100's (vt100 below):
# DECSCNM's light background, the UK character set, origin mode, autowrap
# mixed with controls, and CHT, HPR and VPR, which tmux lacks. No guest:
# the pane (libvterm, tui/faint.c, drawing) against tmux and the VT100.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
VMUX=$BUILD/bin/vmux
TMP=${KEEP:-$(mktemp -d)}
pass=0 failed=0
. "$ROOT/tests/tui/tmux.sh"
trap 'tui_tmux_kill; [[ -n ${KEEP:-} ]] || rm -rf "$TMP"' EXIT

command -v vttest >/dev/null || {
	echo "not ok vttest: not installed (scripts/install-deps installs it)"
	echo "vttest: 0 passed, 1 failed"
	exit 1
}
mkdir -p "$TMP/home/.config/vmux"
printf 'set sidebar off\n' >"$TMP/home/.config/vmux/vmux.conf"

# canon.pl: a capture-pane -e screen as cells, written one canonical way
# (tmux places SGR changes differently for blanks the TUI's ncurses wrote
# and blanks never written, which look the same)
cat >"$TMP/canon.pl" <<'PERL'
# canon: a capture-pane -e screen as cells, written one canonical way:
# each row's cells with an SGR marker where the state changes, trailing
# plain blanks dropped. DEC graphics (tmux keeps SO ... SI around ASCII)
# become the Unicode glyphs the TUI draws. Trailing blanks are dropped
# whatever their attributes, as capture-pane drops them. With INVERT=1
# every cell has reverse video flipped (DECSCNM, which tmux ignores).
use strict; use warnings;
binmode STDIN, ':utf8'; binmode STDOUT, ':utf8';
my %acs = (j=>"\x{2518}", k=>"\x{2510}", l=>"\x{250c}", m=>"\x{2514}",
    n=>"\x{253c}", q=>"\x{2500}", t=>"\x{251c}", u=>"\x{2524}",
    v=>"\x{2534}", w=>"\x{252c}", x=>"\x{2502}", a=>"\x{2592}",
    "`"=>"\x{25c6}", f=>"\x{b0}", g=>"\x{b1}", o=>"\x{23ba}",
    p=>"\x{23bb}", r=>"\x{23bc}", s=>"\x{23bd}", y=>"\x{2264}",
    z=>"\x{2265}", "{"=>"\x{3c0}", "|"=>"\x{2260}", "}"=>"\x{a3}",
    "~"=>"\x{b7}", h=>"\x{2424}", i=>"\x{240b}", b=>"\x{2409}",
    c=>"\x{240c}", d=>"\x{240d}", e=>"\x{240a}");
my %st = (); my $so = 0; my @rows;
sub sgr {
    my @p = split /;/, (length $_[0] ? $_[0] : '0');
    while (@p) {
        my $v = shift @p; $v =~ s/:.*//; $v = 0 if $v eq '';
        if ($v == 0) { %st = () }
        elsif ($v == 38 || $v == 48) {
            my $k = $v == 38 ? 'fg' : 'bg'; my $m = shift @p // 5;
            $st{$k} = $m == 5 ? 'i' . (shift @p // 0)
                : 'r' . join ',', map { shift @p // 0 } 1 .. 3;
        }
        elsif ($v >= 30 && $v <= 37 || $v >= 90 && $v <= 97) { $st{fg} = $v }
        elsif ($v >= 40 && $v <= 47 || $v >= 100 && $v <= 107) { $st{bg} = $v }
        elsif ($v == 39) { delete $st{fg} } elsif ($v == 49) { delete $st{bg} }
        elsif ($v == 22) { delete @st{qw(1 2)} }
        elsif ($v >= 23 && $v <= 29) { delete $st{$v - 20} }
        else { $st{$v} = 1 }
    }
}
sub key { join ';', map { $_ eq 'fg' || $_ eq 'bg' ? "$_=$st{$_}" : $_ } sort keys %st }
for my $line (split /\n/, do { local $/; <STDIN> // '' }) {
    my @cells;
    while ($line =~ /\G(?:\e\[([0-9;:]*)m|(\x0e)|(\x0f)|(.))/gcs) {
        if (defined $1) { sgr($1) } elsif (defined $2) { $so = 1 }
        elsif (defined $3) { $so = 0 }
        else { my $c = $4; $c = $acs{$c} // $c if $so; push @cells, [$c, key()] }
    }
    push @rows, \@cells;
}
push @rows, [] while @rows < 24;
if ($ENV{INVERT}) {
    for my $r (@rows) {
        for my $c (@$r) {
            my %s = map { /=/ ? split(/=/, $_, 2) : ($_ => 1) } split /;/, $c->[1];
            if ($s{7}) { delete $s{7} } else { $s{7} = 1 }
            %st = %s; $c->[1] = key();
        }
    }
}
for my $r (@rows) {
    pop @$r while @$r && $r->[-1][0] eq ' ';
    my $prev = ''; my $out = '';
    for my $c (@$r) {
        $out .= "{$c->[1]}" if $c->[1] ne $prev;
        $prev = $c->[1]; $out .= $c->[0];
    }
    print "$out\n";
}
PERL

# capture TARGET: the 24 rows, raw (capture-pane -e).
capture() { tm capture-pane -p -e -t "$1" -S 0 -E 23; }

# settled TARGET OUT: wait (10 s) until the pane shows a vttest prompt and
# two captures 50 ms apart agree; leave the capture in OUT.
settled() {
	local deadline=$((SECONDS + 10)) prev=
	while ((SECONDS < deadline)); do
		capture "$1" >"$2"
		if grep -qE 'RETURN|Enter choice' "$2" &&
			[[ $(cat "$2") == "$prev" ]]; then
			return 0
		fi
		prev=$(cat "$2")
		sleep 0.05
	done
	return 1
}

# vt100 STEP RAW: the screen a VT100 shows, canonical, from tmux's RAW
# capture: tmux's own where it is right, corrected where tmux departs.
vt100() {
	case $1 in
	screen/3 | screen/4 | screen/14)
		# DECSCNM: "light background", every cell in reverse video
		INVERT=1 perl "$TMP/canon.pl" <"$2" ;;
	cursor/3 | cursor/4)
		# autowrap mixed with controls: tmux splits four letter pairs
		# over two rows and scrolls four pairs off; each pair on its row
		printf '%s\n' 'Test of autowrap, mixing control and print characters.' \
			'The left/right margins should have letters in order:'
		for l in I J K L M N O P Q R S T U V W X Y Z; do
			printf '%s%78s%s\n' "$l" '' "${l,,}"
		done
		printf '\nPush <RETURN>\n\n\n' ;;
	screen/11)
		# origin mode: row 2 is the region's second row, the bottom
		perl "$TMP/canon.pl" <"$2" | perl -e '
			my @r = <STDIN>; my ($i) = grep { $r[$_] =~ /Origin mode test/ } 0 .. $#r;
			if (defined $i) { $r[23] = $r[$i]; $r[$i] = "\n" } print @r' ;;
	charsets/1)
		# the United Kingdom set: # is the pound sign
		perl "$TMP/canon.pl" <"$2" |
			sed '/Character set A/,/Character set 0/{/Character set/!s/#/\xc2\xa3/g}' ;;
	iso6429-cursor-4/3)
		# CHT, which tmux lacks: its rows as the row of plain tabs
		perl "$TMP/canon.pl" <"$2" | perl -e '
			my @r = <STDIN>; @r[1, 2] = @r[7, 8];
			($r[4] = $r[7]) =~ tr/*/+/; print @r' ;;
	iso6429-cursor-5/3 | iso6429-cursor-9/3)
		# HPR and VPR, which tmux lacks: the box vttest draws, as
		# vttest says it is, above tmux's ruler and text (box_outline)
		perl "$TMP/canon.pl" <"$2" | perl -e '
			my @r = <STDIN>; for (@r) { last if /----\+----1/; $_ = "BOX\n" }
			print @r' ;;
	*) perl "$TMP/canon.pl" <"$2" ;;
	esac
}

# box_outline FILE: FILE's rows up to the ruler, if they hold one outline
# of *'s (a full top and bottom edge, the sides only between), become
# "BOX" each, as vt100 writes the wanted screen.
box_outline() {
	perl -e '
		my @r = <STDIN>; my $n = 0; $n++ while $n < @r && $r[$n] !~ /----\+----1/;
		my @b = map { (my $x = $r[$_]) =~ s/\{[^}]*\}//g; chomp $x; $x } 0 .. $n - 1;
		my @rows = grep { $b[$_] =~ /\*/ } 0 .. $#b;
		my $ok = @rows >= 3 && $rows[-1] - $rows[0] == $#rows;
		if ($ok) {
			my ($t, $btm) = ($b[$rows[0]], $b[$rows[-1]]);
			$t =~ /^( *)(\*+)$/ or $ok = 0;
			my ($l, $w) = (length($1 // ""), length($2 // ""));
			$ok &&= $btm eq $t && $w >= 3;
			for my $i (@rows[1 .. $#rows - 1]) {
				$ok &&= $b[$i] eq (" " x $l) . "*" . (" " x ($w - 2)) . "*";
			}
		}
		$r[$_] = "BOX\n" for $ok ? (0 .. $n - 1) : ();
		print @r' <"$1" >"$1.box" && mv "$1.box" "$1"
}

# same NAME STEP: the two panes' screens, settled, must be equal (to the
# VT100's screen where tmux departs from it: vt100).
same() {
	local name=$1 step=$2 ref=$TMP/$1.$2.ref tui=$TMP/$1.$2.tui
	if ! settled "ref-$name" "$ref"; then
		echo "not ok $name/$step: vttest in tmux never settled"
		sed 's/^/  ref | /' "$ref"
		failed=$((failed + 1))
		return 1
	fi
	vt100 "$name/$step" "$ref" >"$ref.want"
	# the TUI may still show the last screen (it too says RETURN) while
	# a loaded machine catches up: wait for the one wanted, then judge
	local deadline=$((SECONDS + 30))
	while :; do
		settled "tui-$name" "$tui"
		perl "$TMP/canon.pl" <"$tui" >"$tui.got"
		grep -q '^BOX$' "$ref.want" && box_outline "$tui.got"
		cmp -s "$ref.want" "$tui.got" || ((SECONDS >= deadline)) ||
			{ sleep 0.2; continue; }
		break
	done
	if cmp -s "$ref.want" "$tui.got"; then
		echo "ok   $name/$step: $(grep -m1 '[[:alnum:]]' "$tui.got" | sed 's/{[^}]*}//g; s/^ *//' | cut -c1-50)"
		pass=$((pass + 1))
	else
		echo "not ok $name/$step: the TUI's screen differs from the VT100's"
		diff "$ref.want" "$tui.got" | head -20 | sed 's/^/  /'
		failed=$((failed + 1))
	fi
}

# walk NAME KEYS...: start vttest in both panes, choose the menu items
# KEYS (comparing each menu), then press Return through the test's
# screens, comparing each, until a menu is back.
walk() {
	local name=$1 step=0
	shift
	tm new-window -d -n "ref-$name" -- vttest 24x80.80
	tm resize-window -t "ref-$name" -x 80 -y 24
	tm new-window -d -n "tui-$name" -- \
		env -i PATH=/usr/bin:/bin HOME="$TMP/home" TERM=tmux-256color \
		LANG=C.UTF-8 "$VMUX" tui --local-command "vttest 24x80.80"
	tm resize-window -t "tui-$name" -x 80 -y 25
	same "$name" menu || return
	for key in "$@"; do
		for w in ref tui; do
			tm send-keys -t "$w-$name" -l "$key"
			tm send-keys -t "$w-$name" Enter
		done
		step=$((step + 1))
		same "$name" "$step" || return
	done
	while ((step < 60)) && ! grep -q 'Enter choice' "$TMP/$name.$step.ref"; do
		for w in ref tui; do
			tm send-keys -t "$w-$name" Enter
		done
		step=$((step + 1))
		same "$name" "$step" || return
	done
	tm kill-window -t "ref-$name"
	tm kill-window -t "tui-$name"
}

tm new-session -d -s vt -x 80 -y 25 -- sleep 3600
walk cursor 1
walk screen 2
walk charsets 3
walk vt102 8
for i in 1 2 3 4 5 6 7 8 9; do walk "iso6429-cursor-$i" 11 5 "$i"; done
for i in 2 3 4 5 6; do walk "iso6429-other-$i" 11 7 "$i"; done

echo "vttest: $pass passed, $failed failed"
((failed == 0))
