#!/bin/sh
# seed_fuzz_archive.sh DIR: write seed inputs for fuzz_archive into DIR.
# Each seed is one control byte (chunking/flags, see fuzz_archive.c) and a
# tar made here with GNU tar: every format, gzip'd, long names, links, and
# hostile ones (.., absolute names, escaping symlinks, file through a link).
set -eu
mkdir -p "$1"
out=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
cd "$work"

mkdir -p t/sub/deeper t/empty
printf 'hello\n' > t/a.txt
: > t/zero
seq 1 300 > t/sub/numbers
printf '#!/bin/sh\n' > t/script && chmod 755 t/script
ln -s a.txt t/link
ln -s ../a.txt t/sub/up
ln t/a.txt t/hard
L=$(printf 'n%.0s' $(seq 1 120))
mkdir -p "t/$L" && printf long > "t/$L/$L"
ln -s "$L/$L" t/longlink
find t -exec touch -h -d @1600000000 {} +

# seed NAME CONTROL-BYTE-OCTAL FILE: prefix the control byte.
seed() {
	{ printf "\\$2"; cat "$3"; } > "$out/$1"
}

n=0
for fmt in gnu oldgnu posix ustar v7; do
	if [ "$fmt" = ustar ] || [ "$fmt" = v7 ]; then
		tar -b1 --format=$fmt -cf x.tar t/a.txt t/sub t/link t/hard \
		    t/zero 2>/dev/null
	else
		tar -b1 --format=$fmt -cf x.tar t
	fi
	seed "$fmt" "00$n" x.tar
	seed "$fmt-z" "04$n" x.tar # the target gzips it (control bit 0x20)
	gzip -9nc x.tar > x.tgz
	seed "$fmt-gz" "01$n" x.tgz
	n=$((n + 1))
done

# Hostile: names with .., absolute names, escaping symlinks.
tar -b1 -P --transform 's,^t/a,../../escape,' -cf x.tar t/a.txt
seed dotdot 000 x.tar
tar -b1 -P -cf x.tar "$work/t/a.txt"
seed absolute 005 x.tar
ln -s /etc esc-abs
ln -s ../../outside esc-rel
tar -b1 -cf x.tar esc-abs esc-rel
seed symlinks 010 x.tar
# "a -> ../outside" then "a/passwd", concatenated from two archives.
ln -s ../outside a
tar -b1 -cf one.tar a
rm a && mkdir a && printf pwned > a/passwd
tar -b1 -cf two.tar a/passwd
head -c -1024 one.tar > x.tar && cat two.tar >> x.tar
seed link-then-file 004 x.tar
# A symlink inside, then a file through it.
rm -rf a && ln -s t a
tar -b1 -cf one.tar a
rm a && mkdir a && printf pwned > a/passwd
tar -b1 -cf two.tar a/passwd
head -c -1024 one.tar > x.tar && cat two.tar >> x.tar
seed inner-link-then-file 006 x.tar
# Hard link to outside.
tar -b1 -P --transform 's,^t/hard,h,;s,^t/a.txt,../outside/secret,' \
    -cf x.tar t/a.txt t/hard 2>/dev/null
seed hardlink 007 x.tar
# Rename the top level.
tar -b1 -cf x.tar t
seed rename 020 x.tar
# Sparse member.
truncate -s 20000 sp && printf x >> sp
tar -b1 -S --format=posix -cf x.tar sp
seed sparse 003 x.tar
