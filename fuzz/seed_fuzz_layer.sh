#!/bin/sh
# seed_fuzz_layer.sh DIR: fuzz_archive's seeds, and layers with whiteouts,
# opaque directories, a directory replaced by a file and whiteouts that
# try to leave the root.
set -eu
sh "$(dirname "$0")/seed_fuzz_archive.sh" "$1"
out=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
cd "$work"
mkdir -p l/etc l/opq/sub l/gone
printf 'x' > l/etc/keep
: > l/etc/.wh.gone
: > l/opq/.wh..wh..opq
printf 'n' > l/opq/sub/new
: > l/.wh.gone
ln -s /etc/keep l/abs
tar -b1 --format=posix -cf a.tar -C l .
printf '\000' | cat - a.tar > "$out/layer-whiteouts"
printf '\040' | cat - a.tar > "$out/layer-whiteouts-z"
mkdir -p m/x && : > m/x/.wh...
tar -b1 -cf b.tar -C m . --transform 's,x/\.wh\.\.\.,x/.wh.../..,'
printf '\000' | cat - b.tar > "$out/layer-dotdot-whiteout"
# whiteouts naming the root's parent or itself
mkdir -p w && : > w/.wh... && : > w/.wh..
tar -b1 -cf w.tar -C w .wh... .wh..
printf '\000' | cat - w.tar > "$out/layer-whiteout-dotdot"
