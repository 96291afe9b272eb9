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

# image_index LAYOUT NEWTAG TAG...: an image index in LAYOUT naming the
# images TAG... with their platforms (from their configs), tagged NEWTAG.
image_index() {
	python3 - "$@" <<'PY'
import hashlib, json, os, sys
layout, newtag, tags = sys.argv[1], sys.argv[2], sys.argv[3:]
def blob(d):
    return os.path.join(layout, "blobs", "sha256", d.split(":")[1])
idx_path = os.path.join(layout, "index.json")
idx = json.load(open(idx_path))
by_tag = {m["annotations"]["org.opencontainers.image.ref.name"]: m
          for m in idx["manifests"] if "annotations" in m}
entries = []
for t in tags:
    m = by_tag[t]
    man = json.load(open(blob(m["digest"])))
    cfg = json.load(open(blob(man["config"]["digest"])))
    entries.append({"mediaType": m["mediaType"], "digest": m["digest"],
                    "size": m["size"],
                    "platform": {"architecture": cfg["architecture"], "os": cfg["os"]}})
data = json.dumps({"schemaVersion": 2,
                   "mediaType": "application/vnd.oci.image.index.v1+json",
                   "manifests": entries}).encode()
d = "sha256:" + hashlib.sha256(data).hexdigest()
open(blob(d), "wb").write(data)
idx["manifests"] = [m for m in idx["manifests"]
                    if m.get("annotations", {}).get("org.opencontainers.image.ref.name") != newtag]
idx["manifests"].append({"mediaType": "application/vnd.oci.image.index.v1+json",
                         "digest": d, "size": len(data),
                         "annotations": {"org.opencontainers.image.ref.name": newtag}})
json.dump(idx, open(idx_path, "w"))
PY
}

# cut_proxy PORT LIMIT: a TCP proxy on a free port to 127.0.0.1:PORT that
# drops each connection once LIMIT bytes came back from the registry (a
# registry cut off in the middle of a layer). Sets CUT (127.0.0.1:PORT).
cut_proxy() {
	local port
	port=$(free_port)
	python3 - "$port" "$1" "$2" <<'PY' >>"$REG_DIR/proxy.log" 2>&1 &
import socket, sys, threading
lport, rport, limit = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", lport))
srv.listen(16)
def pipe(a, b, count):
    n = 0
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            if count and n + len(d) > limit:
                b.sendall(d[:limit - n])
                break
            n += len(d)
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def serve(c):
    u = socket.create_connection(("127.0.0.1", rport))
    threading.Thread(target=pipe, args=(c, u, False), daemon=True).start()
    pipe(u, c, True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
	bg_track $!
	CUT=127.0.0.1:$port
	wait_for 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null || return 1
	mkdir -p "$HOME/.config/containers/certs.d/$CUT"
	cp "$REG_DIR/pki/ca.crt" "$HOME/.config/containers/certs.d/$CUT/ca.crt"
	skopeo login --authfile "$REGISTRY_AUTH_FILE" -u "$REG_USER" -p "$REG_PASS" "$CUT" >/dev/null
}
