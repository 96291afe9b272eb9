#!/bin/sh
# seed_fuzz_screen.sh DIR: seeds for fuzz_screen: pieces of output (a
# length byte, then the bytes) and resizes (0xff, cols/2, rows).
set -eu
d=$1
# text, colours, a wide and a combining character, scrolling
printf '\040\033[31mred\033[0m \344\270\255 e\314\201\r\n\r\n\r\n\r\nend' >"$d/text"
# a scroll region and a saved cursor, then a much shorter screen
printf '\022\033[20;24r\033[24;1H\0337\377\050\010\021\033[8;1H\n\n\033[2S\0338\033#6' >"$d/shrink"
# the alternate screen, DECSCNM, insert and delete, a taller screen
printf '\040\033[?1049h\033[?5hab\033[2@\033[3P\033[2L\033[M\033[?69h\033[2;9s\377\020\100\010\033[?1049lx' >"$d/alt"
