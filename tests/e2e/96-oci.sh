#!/usr/bin/env bash
# 96-oci: images by reference against a real registry (Debian's
# docker-registry with TLS from a CA made here and htpasswd auth), images
# built here with umoci from Debian's static busybox and pushed with skopeo:
# `vmux new --image alpine:3` through a short-name alias, a digest, layers
# with whiteouts, opaque directories and hard links, the image's config,
# offline boots of a pulled tag, two pulls at once, oci: and
# docker-archive: files, and every way a pull fails leaving nothing behind.
source "$(dirname "$0")/lib.sh"
export HOME=$VMUX_HOME/home
mkdir -p "$HOME"
export REGISTRY_AUTH_FILE=$HOME/auth.json
source "$(dirname "$0")/registry.sh"

registry_start || exit 1
registry_login || {
	echo "FAIL skopeo login"
	exit 1
}
# short names resolve through this file alone: alpine is ours, not Docker's
export CONTAINERS_REGISTRIES_CONF=$TMP/registries.conf
cat >"$CONTAINERS_REGISTRIES_CONF" <<EOF
unqualified-search-registries = ["$REG"]
[aliases]
"alpine" = "$REG/library/alpine"
EOF

LAYOUT=$TMP/layout
ROOT=$TMP/root
mkdir -p "$ROOT/bin" "$ROOT/etc" "$ROOT/app" "$ROOT/gone/deep" "$ROOT/opq"
cp "$(command -v busybox)" "$ROOT/bin/busybox"
for c in sh ls cat echo id env pwd stat; do ln -s busybox "$ROOT/bin/$c"; done
printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/app:/bin/sh\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\napp:x:1000:\n' >"$ROOT/etc/group"
echo lower >"$ROOT/etc/marker"
echo doomed >"$ROOT/gone/deep/file"
echo old >"$ROOT/opq/old"
chown 1000:1000 "$ROOT/app"
image_build "$LAYOUT" base "$ROOT" || exit 1

# an upper layer made by hand: a whiteout, an opaque directory and a hard
# link (umoci raw add-layer takes the tar as it is)
UP=$TMP/up
mkdir -p "$UP/gone" "$UP/opq" "$UP/etc"
touch "$UP/.wh.gone" "$UP/opq/.wh..wh..opq"
echo new >"$UP/opq/new"
echo upper >"$UP/etc/marker"
ln "$UP/etc/marker" "$UP/etc/marker-link"
rmdir "$UP/gone"
tar --numeric-owner -C "$UP" -cf "$TMP/up.tar" .wh.gone opq etc
cp -r "$LAYOUT" "$TMP/layout2"
umoci raw add-layer --image "$LAYOUT:base" --tag three "$TMP/up.tar" >/dev/null || exit 1
umoci config --image "$LAYOUT:three" --tag three --config.env "GREETING=hello from the image" \
	--config.workingdir /app --config.user app \
	--config.entrypoint /bin/echo --config.cmd "image-cmd" \
	--config.label org.opencontainers.image.title=vmux-test >/dev/null || exit 1
push "$LAYOUT:three" library/alpine:3 || exit 1
push "$LAYOUT:base" team/base:1 || exit 1

t_short_name() {
	need_session oa --image alpine:3
	expect_eq marker "$(vmux exec oa -- cat /etc/marker /etc/marker-link)" $'upper\nupper' || return 1
	expect_eq "ls --json image" "$(session_field oa image)" "$REG/library/alpine:3" || return 1
	expect_match digest "$(session_field oa image_digest)" '^sha256:[0-9a-f]{64}$'
}

t_layers() {
	local out
	out=$(vmux exec oa -- sh -c 'ls -a /opq | tr "\n" " "; test -e /gone && echo gone-is-there; stat -c %h /etc/marker')
	expect_eq "whiteouts" "$out" ". .. new 2" || return 1
	vmux exec oa -- sh -c 'ls -a / | grep -q "^\.wh\." && echo leaked' | grep -q leaked && fail "a whiteout file is in the root"
	return 0
}

t_config() {
	local out
	out=$(vmux exec oa -- sh -c 'echo "$GREETING"; pwd; id -u')
	expect_eq "env, cwd, user" "$out" $'hello from the image\n/app\n1000' || return 1
	out=$(vmux exec oa --env GREETING=mine -- sh -c 'echo "$GREETING"')
	expect_eq "--env over Env" "$out" mine || return 1
	expect_eq "--user root" "$(vmux exec oa --user root -- id -u)" 0 || return 1
	expect_eq "--user uid:gid" "$(vmux exec oa -u 1234:1000 -- sh -c 'echo $(id -u) $(id -g)')" "1234 1000" || return 1
	out=$(vmux exec oa --user nobody-here -- id 2>&1)
	[[ $? -eq 126 ]] && expect_match "unknown user" "$out" "user 'nobody-here' is not in the guest's /etc/passwd" || return 1
	vmux open oa --id su --user root >/dev/null || return 1
	vmux send-keys oa su 'echo "uid=$(id -u)"' Enter >/dev/null || return 1
	wait_for 20 bash -c "'$VMUX' capture oa su --plain | grep -q '^uid=0'" || fail "a root shell: $(vmux capture oa su --plain)"
}

t_run_entrypoint() {
	local out
	out=$(vmux run --rm --image alpine:3 2>/dev/null)
	expect_eq "Entrypoint + Cmd" "$out" image-cmd || return 1
	out=$(vmux run --rm --image alpine:3 -- other args 2>/dev/null)
	expect_eq "args replace Cmd" "$out" "other args"
}

t_digest_and_qualified() {
	local d
	d=$(skopeo inspect --format '{{.Digest}}' "docker://$REG/team/base:1") || return 1
	need_session od --image "$REG/team/base@$d"
	expect_eq "by digest" "$(vmux exec od -- cat /etc/marker)" lower || return 1
	expect_eq "labels" "$(vmux images --json | jq -r --arg r "$REG/library/alpine:3" '.[] | select(.ref == $r) | .labels["org.opencontainers.image.title"]')" vmux-test || return 1
	expect_eq "images lists it" "$(vmux images --json | jq -r --arg r "$REG/team/base@$d" '.[] | select(.ref == $r) | .sessions[0]')" od
}

t_offline_after_pull() {
	registry_stop || return 1
	need_session ooff --image alpine:3
	expect_eq offline "$(vmux exec ooff -- cat /etc/marker)" upper || return 1
	local out
	out=$(vmux new bad --image alpine:3 --pull always 2>&1)
	[[ $? -eq 125 ]] && expect_match "down" "$out" "cannot reach $REG" || return 1
	[[ ! -e $VMUX_HOME/sessions/bad ]] || fail "a session was left"
	registry_start "$REG_PORT"
}

t_failures() {
	local out rc n
	n=$(ls "$VMUX_HOME/images/oci/blobs/sha256" | wc -l)
	out=$(vmux images pull "$REG/library/alpine:nope" 2>&1)
	rc=$?
	[[ $rc -eq 3 ]] && expect_match "unknown tag" "$out" "no such image or tag in $REG" || return 1
	out=$(REGISTRY_AUTH_FILE=$TMP/none.json vmux images pull "$REG/team/base:1" --pull always 2>&1)
	rc=$?
	[[ $rc -eq 4 ]] && expect_match "no credentials" "$out" "skopeo login $REG" || return 1
	printf '{"auths":{"%s":{"auth":"%s"}}}' "$REG" "$(printf alice:wrong | base64)" >"$TMP/bad.json"
	out=$(REGISTRY_AUTH_FILE=$TMP/bad.json vmux images pull "$REG/team/base:1" --pull always 2>&1)
	rc=$?
	[[ $rc -eq 4 ]] && expect_match "wrong credentials" "$out" "refused the credentials" || return 1
	out=$(vmux images pull "docker://$REG/Bad/Name" 2>&1)
	rc=$?
	[[ $rc -eq 2 ]] && expect_match "malformed" "$out" "bad name 'Bad'" || return 1
	out=$(vmux images pull "ftp://x/y" 2>&1)
	rc=$?
	[[ $rc -eq 2 ]] && expect_match "transport" "$out" "unknown transport" || return 1
	rm -rf "$HOME/.config/containers/certs.d"
	out=$(vmux images pull "$REG/team/base:1" --pull always 2>&1)
	rc=$?
	mkdir -p "$HOME/.config/containers/certs.d/$REG"
	cp "$REG_DIR/pki/ca.crt" "$HOME/.config/containers/certs.d/$REG/"
	[[ $rc -eq 5 ]] && expect_match "tls" "$out" "certs.d/$REG/ca.crt" || return 1
	[[ $(ls "$VMUX_HOME/images/oci/blobs/sha256" | wc -l) -eq $n ]] || fail "blobs left by failed pulls"
	[[ -z $(ls -d "$VMUX_HOME"/images/oci/tmp.* 2>/dev/null) ]] || fail "a private layout was left"
}

t_tampered_blob() {
	local blob out rc layer
	# an image of its own: no layer of it is in vmux's cache yet
	echo tamper >"$ROOT/etc/tamper"
	image_build "$LAYOUT" tamper "$ROOT" || return 1
	rm "$ROOT/etc/tamper"
	push "$LAYOUT:tamper" team/tamper:1 || return 1
	layer=$(skopeo inspect --format '{{range .Layers}}{{.}} {{end}}' "docker://$REG/team/tamper:1" | awk '{print $NF}')
	blob=$REG_DIR/storage/docker/registry/v2/blobs/sha256/${layer:7:2}/${layer:7}/data
	[[ -f $blob ]] || fail "no blob $blob" || return 1
	# a layer's bytes changed in the registry's storage: refused
	cp "$blob" "$TMP/blob.orig"
	printf 'X' | dd of="$blob" bs=1 seek=1000 conv=notrunc 2>/dev/null
	out=$(vmux new bad --image "$REG/team/tamper:1" 2>&1)
	rc=$?
	cp "$TMP/blob.orig" "$blob"
	[[ $rc -eq 125 ]] && expect_match tamper "$out" "does not match its digest" || return 1
	[[ ! -e $VMUX_HOME/sessions/bad ]] || fail "a session was left" || return 1
	[[ ! -e $VMUX_HOME/images/oci/blobs/sha256/${layer:7} ]] || fail "the tampered blob was kept" || return 1
	vmux images --json | jq -e --arg r "$REG/team/tamper:1" 'all(.[]; .ref != $r)' >/dev/null ||
		fail "a tampered image was named"
}

t_two_at_once() {
	local a b
	push "$LAYOUT:base" team/twice:1 || return 1
	vmux new otw1 --image "$REG/team/twice:1" >"$TMP/tw1" 2>&1 &
	a=$!
	vmux new otw2 --image "$REG/team/twice:1" >"$TMP/tw2" 2>&1 &
	b=$!
	wait $a || fail "first: $(cat "$TMP/tw1")"
	wait $b || fail "second: $(cat "$TMP/tw2")"
	[[ $(cat "$TMP/tw1" "$TMP/tw2" | grep -c "^.*pulling") -eq 1 ]] || fail "pulled twice: $(cat "$TMP/tw1" "$TMP/tw2")" || return 1
	expect_eq same "$(session_field otw1 root_image)" "$(session_field otw2 root_image)"
	vmux rm -f otw1 otw2 >/dev/null
}

t_local_files() {
	skopeo copy -q "oci:$LAYOUT:base" "docker-archive:$TMP/saved.tar:saved:1" || return 1
	need_session oarc --image "docker-archive:$TMP/saved.tar"
	expect_eq docker-archive "$(vmux exec oarc -- cat /etc/marker)" lower || return 1
	need_session olay --image "oci:$TMP/layout2:base"
	expect_eq oci "$(vmux exec olay -- cat /etc/marker)" lower
	vmux rm -f oarc olay >/dev/null
}

t_multi_arch() {
	local out rc
	umoci config --image "$LAYOUT:base" --tag arm --architecture arm64 >/dev/null || return 1
	image_index "$LAYOUT" both arm base || return 1
	image_index "$LAYOUT" armonly arm || return 1
	skopeo copy -q --all "oci:$LAYOUT:both" "docker://$REG/team/multi:both" >/dev/null || return 1
	skopeo copy -q --all "oci:$LAYOUT:armonly" "docker://$REG/team/multi:armonly" >/dev/null || return 1
	need_session omulti --image "$REG/team/multi:both"
	expect_eq "amd64 chosen" "$(vmux exec omulti -- cat /etc/marker)" lower || return 1
	vmux rm -f omulti >/dev/null
	out=$(vmux images pull "$REG/team/multi:armonly" 2>&1)
	rc=$?
	[[ $rc -eq 6 ]] && expect_match "no amd64" "$out" "has no linux/amd64 image \(it has linux/arm64\)"
}

t_cut_mid_layer() {
	local out rc n
	echo cut >"$ROOT/etc/cut"
	image_build "$LAYOUT" cut "$ROOT" || return 1
	rm "$ROOT/etc/cut"
	push "$LAYOUT:cut" team/cut:1 || return 1
	cut_proxy "$REG_PORT" 300000 || return 1
	n=$(ls "$VMUX_HOME/images/oci/blobs/sha256" | wc -l)
	out=$(vmux images pull "$CUT/team/cut:1" 2>&1)
	rc=$?
	[[ $rc -eq 5 ]] && expect_match "cut" "$out" "broke during the pull" || return 1
	[[ $(ls "$VMUX_HOME/images/oci/blobs/sha256" | wc -l) -eq $n ]] || fail "a blob of a cut pull was kept" || return 1
	[[ -z $(ls -d "$VMUX_HOME"/images/oci/tmp.* 2>/dev/null) ]] || fail "a private layout was left" || return 1
	vmux images --json | jq -e 'all(.[]; (.ref // "") | contains("team/cut") | not)' >/dev/null ||
		fail "a cut image was named"
}

# FROM scratch: one static program and nothing else, no shell
t_distroless() {
	local d=$TMP/scratchroot
	mkdir -p "$d/app"
	cp "$(command -v busybox)" "$d/app/busybox"
	image_build "$LAYOUT" scratch "$d" --config.entrypoint /app/busybox --config.cmd true || return 1
	push "$LAYOUT:scratch" team/distroless:1 || return 1
	need_session odl --image "$REG/team/distroless:1"
	expect_eq "exec argv" "$(vmux exec odl -- /app/busybox echo from-scratch)" from-scratch || return 1
	vmux exec odl -- /app/busybox test -e /bin/sh && fail "the image has a shell" && return 1
	vmux open odl --id s1 >/dev/null || return 1
	wait_for 20 bash -c "'$VMUX' capture odl s1 --plain | grep -q \"this image has no /bin/sh: this is vmux's busybox sh\"" ||
		fail "no note: $(vmux capture odl s1 --plain)" || return 1
	vmux send-keys odl s1 'echo $((6 * 7))-in-scratch; ls /app' Enter >/dev/null || return 1
	wait_for 20 bash -c "'$VMUX' capture odl s1 --plain | grep -q '^42-in-scratch'" ||
		fail "the fallback shell did not answer: $(vmux capture odl s1 --plain)" || return 1
	vmux rm -f odl >/dev/null
}

# mcp_create NAME IMAGE [MCP ARGS...]: session_create over stdio; its answer.
mcp_create() {
	local name=$1 image=$2
	shift 2
	printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p1"},"name":"session_create","arguments":{"name":"%s","image":"%s"}}}\n' \
		"$name" "$image" | timeout 120 "$VMUX" mcp "$@"
}

t_mcp_image_policy() {
	local out
	out=$(mcp_create om1 alpine:3) || return 1
	[[ $(jq -r 'select(.id == 1) | .result.isError' <<<"$out") == false ]] || fail "a pulled image refused: $out" || return 1
	expect_eq "pulled image" "$(session_field om1 image)" "$REG/library/alpine:3" || return 1
	push "$LAYOUT:base" team/agentimg:1 || return 1
	out=$(mcp_create om2 "$REG/team/agentimg:1")
	expect_match "not allowed" "$out" "may not pull it" || return 1
	out=$(mcp_create om3 "oci:$LAYOUT:base")
	expect_match "no host files" "$out" "no guest image named .*nor a registry's image" || return 1
	out=$(mcp_create om2 "$REG/team/agentimg:1" --allow-image "$REG/team/*") || return 1
	[[ $(jq -r 'select(.id == 1) | .result.isError' <<<"$out") == false ]] || fail "an allowed image refused: $out" || return 1
	# the pull's layers arrive as progress notifications
	jq -e -s 'any(.[]; .method == "notifications/progress" and (.params.message | startswith("layer sha256:")))' <<<"$out" >/dev/null ||
		fail "no pull progress: $out" || return 1
	expect_eq "allowed image" "$(vmux exec om2 -- cat /etc/marker)" lower || return 1
	vmux rm -f om1 om2 >/dev/null
}

# a glibc image: a dynamic program of Debian's with its loader and libraries
t_glibc() {
	local g=$TMP/glibcroot lib
	mkdir -p "$g/usr/bin"
	cp /usr/bin/env /usr/bin/cat "$g/usr/bin/"
	for lib in $(ldd /usr/bin/env /usr/bin/cat | grep -o '/[^ ]*'); do
		mkdir -p "$g$(dirname "$lib")"
		cp -L "$lib" "$g$lib"
	done
	image_build "$LAYOUT" glibc "$g" --config.env PATH=/usr/bin || return 1
	push "$LAYOUT:glibc" team/glibc:1 || return 1
	need_session ogl --image "$REG/team/glibc:1"
	expect_match "glibc program" "$(vmux exec ogl -- env)" "^PATH=/usr/bin" || return 1
	expect_eq "glibc cat runs (and fails: no such file)" "$(vmux exec ogl -- cat /etc/os-release 2>/dev/null; echo $?)" 1
	vmux rm -f ogl >/dev/null
}

t_profile_image() {
	mkdir -p "$XDG_CONFIG_HOME/vmux/profiles"
	printf 'inherit default\nimage alpine:3\n' >"$XDG_CONFIG_HOME/vmux/profiles/alp.profile"
	need_session opr --profile alp
	expect_eq "the profile's image" "$(vmux exec opr -- cat /etc/marker)" upper || return 1
	expect_eq "ls --json image" "$(session_field opr image)" "$REG/library/alpine:3" || return 1
	vmux rm -f opr >/dev/null
}

t_images_rm() {
	local out
	out=$(vmux images rm "$REG/library/alpine:3" 2>&1)
	[[ $? -ne 0 ]] && expect_match "in use" "$out" "used by oa" || return 1
	vmux rm -f oa ooff >/dev/null
	vmux images rm "$REG/library/alpine:3" >/dev/null || return 1
	vmux images --json | jq -e --arg r "$REG/library/alpine:3" 'all(.[]; .ref != $r)' >/dev/null
}

check "--image alpine:3: a short name's alias, a registry with TLS and auth" t_short_name
check "layers: whiteouts, an opaque directory, hard links" t_layers
check "the image's Env, WorkingDir and User; --user chooses another" t_config
check "run --image: Entrypoint and Cmd, args replace Cmd" t_run_entrypoint
check "a digest reference; vmux images says who uses it" t_digest_and_qualified
check "a pulled tag boots with the registry down; --pull always fails" t_offline_after_pull
check "failures: unknown tag, credentials, malformed, TLS; nothing left" t_failures
check "a tampered blob: refused, nothing cached" t_tampered_blob
check "two new --image at once pull once" t_two_at_once
check "docker-archive: and oci: files" t_local_files
check "a multi-platform index: amd64 chosen; none is refused naming them" t_multi_arch
check "a registry cut off in the middle of a layer: nothing cached" t_cut_mid_layer
check "a distroless image: exec of an argv, vmux's busybox as its shell" t_distroless
check "MCP session_create: pulled images, --allow-image, no host files" t_mcp_image_policy
check "a glibc image (Debian's dynamic programs)" t_glibc
check "a profile's image REF" t_profile_image
check "images rm: refused while used, then gone" t_images_rm
