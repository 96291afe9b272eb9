# registry.sh: a real registry for the image tests (sourced after lib.sh).
#
# registry_start runs Debian's docker-registry (distribution 2.8) on a free
# loopback port with TLS from a CA made here and htpasswd auth, and trusts
# and logs in to it the way users do: the CA in the private HOME's
# ~/.config/containers/certs.d/HOST:PORT/ca.crt, credentials written by
# `skopeo login` to $REGISTRY_AUTH_FILE. It sets REG (127.0.0.1:PORT),
# REG_DIR, REG_USER, REG_PASS; registry_stop and registry_start again
# (same port, same storage) model a registry that goes away.
# image_build DIR TAG ROOTFS: an OCI layout image from a root directory.

REG_DIR=$TMP/registry
REG_USER=alice
REG_PASS=s3cret-pass

# free_port: a loopback port nobody listens on now.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# registry_start [PORT]: start (or restart on PORT) the registry.
registry_start() {
	local fixed=${1:-} port i
	mkdir -p "$REG_DIR/storage" "$REG_DIR/pki"
	if [[ ! -f $REG_DIR/pki/ca.crt ]]; then
		(
			cd "$REG_DIR/pki" || exit 1
			openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=vmux-test-ca \
				-keyout ca.key -out ca.crt 2>/dev/null &&
				openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 \
					-keyout server.key -out server.csr 2>/dev/null &&
				printf 'subjectAltName=IP:127.0.0.1\n' >san.ext &&
				openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
					-days 2 -extfile san.ext -out server.crt 2>/dev/null
		) || return 1
		htpasswd -Bbc "$REG_DIR/htpasswd" "$REG_USER" "$REG_PASS" 2>/dev/null || return 1
	fi
	for i in 1 2 3 4 5; do
		port=${fixed:-$(free_port)}
		cat >"$REG_DIR/config.yml" <<-EOF
			version: 0.1
			log: {level: warn}
			storage:
			  filesystem: {rootdirectory: $REG_DIR/storage}
			  delete: {enabled: true}
			http:
			  addr: 127.0.0.1:$port
			  tls: {certificate: $REG_DIR/pki/server.crt, key: $REG_DIR/pki/server.key}
			auth:
			  htpasswd: {realm: vmux-test, path: $REG_DIR/htpasswd}
		EOF
		# REGISTRY_* variables are the registry's own settings: none of ours
		env -u REGISTRY_AUTH_FILE docker-registry serve "$REG_DIR/config.yml" \
			>>"$REG_DIR/log" 2>&1 &
		REG_PID=$!
		bg_track "$REG_PID"
		if wait_for 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
			REG_PORT=$port
			REG=127.0.0.1:$port
			mkdir -p "$HOME/.config/containers/certs.d/$REG"
			cp "$REG_DIR/pki/ca.crt" "$HOME/.config/containers/certs.d/$REG/ca.crt"
			return 0
		fi
		kill "$REG_PID" 2>/dev/null
	done
	echo "registry did not start: $(tail -3 "$REG_DIR/log")"
	return 1
}

# registry_stop: the registry goes away (its storage stays).
registry_stop() {
	kill "$REG_PID" 2>/dev/null
	wait_for 20 bash -c "! kill -0 $REG_PID 2>/dev/null && ! exec 3<>/dev/tcp/127.0.0.1/$REG_PORT" 2>/dev/null
}

# registry_login: credentials the way skopeo login writes them.
registry_login() {
	skopeo login --authfile "$REGISTRY_AUTH_FILE" -u "$REG_USER" -p "$REG_PASS" "$REG" >/dev/null
}

# push LAYOUT:TAG NAME:TAG: copy an image from an OCI layout to the registry.
push() {
	skopeo copy -q "oci:$1" "docker://$REG/$2" >/dev/null
}

# image_build LAYOUT TAG ROOTFS [umoci config flags...]: an image of ROOTFS.
image_build() {
	local layout=$1 tag=$2 rootfs=$3 bundle=$TMP/bundle.$RANDOM
	shift 3
	[[ -d $layout ]] || umoci init --layout "$layout" || return 1
	umoci new --image "$layout:$tag" || return 1
	umoci unpack --image "$layout:$tag" "$bundle" >/dev/null || return 1
	cp -a "$rootfs/." "$bundle/rootfs/" || return 1
	umoci repack --image "$layout:$tag" "$bundle" >/dev/null || return 1
	rm -rf "$bundle"
	if (($# > 0)); then
		umoci config --image "$layout:$tag" "$@" >/dev/null || return 1
	fi
}
