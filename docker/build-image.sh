#!/usr/bin/env bash
# Build the agora runtime image offline, FROM scratch (docker/Dockerfile): the
# project's own release binaries (`agora`, the command line, and `agora-node`,
# the full program it hands the node and local commands to), stripped into a
# staging directory, exactly the shared libraries `ldd` lists for them plus the
# dynamic loader, and a minimal /etc. No base image is pulled, so this works with no container registry.
#
#   docker/build-image.sh [--force]
#
# Environment:
#   AGORA_IMAGE  the tag to build (default agora:local)
#   AGORA_BIN    the command line to package (default: $CARGO_TARGET_DIR/release/agora,
#                $HOME/.cache/agora-target unless set, as scripts/env.sh says);
#                the full program is the `agora-node` beside it.
#                When the default binaries are missing, the workspace is built
#                first (release profile, scripts/setup.sh for what it needs).
#
# The image is rebuilt only when a binary changed (their sizes and modification
# times are recorded in the image's label org.agora.source), or with --force.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
IMAGE="${AGORA_IMAGE:-agora:local}"
force=0
case "${1:-}" in
  --force) force=1 ;;
  "") ;;
  *) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

die() { echo "build-image: $*" >&2; exit 1; }
command -v docker >/dev/null 2>&1 || die "docker is not installed"
docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed)"
for tool in objcopy ldd tar; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is needed (apt-get install binutils libc-bin tar)"
done

if [ -n "${AGORA_BIN:-}" ]; then
  BIN="$AGORA_BIN"
  [ -x "$BIN" ] || die "AGORA_BIN=$BIN is not an executable"
else
  # shellcheck source=../scripts/env.sh
  . "$repo/scripts/env.sh"
  BIN="$CARGO_TARGET_DIR/release/agora"
  if [ ! -x "$BIN" ] || [ ! -x "$(dirname "$BIN")/agora-node" ]; then
    echo "build-image: $BIN or agora-node beside it is missing: building the workspace (release; RocksDB's C++ takes 15-35 minutes the first time)" >&2
    (cd "$repo" && bash scripts/setup.sh && cargo build --release --workspace --locked)
    [ -x "$BIN" ] || die "the build did not produce $BIN"
  fi
fi
NODE_BIN="$(dirname "$BIN")/agora-node"
[ -x "$NODE_BIN" ] || die "$NODE_BIN is missing: the full program is packaged from beside $BIN"

stamp="$(stat -L -c '%s-%Y' "$BIN")/$(stat -L -c '%s-%Y' "$NODE_BIN")"
current="$(docker image inspect -f '{{ index .Config.Labels "org.agora.source" }}' "$IMAGE" 2>/dev/null || true)"
if [ "$force" = 0 ] && [ "$current" = "$stamp" ]; then
  echo "build-image: $IMAGE is up to date with $BIN" >&2
  exit 0
fi

old_id="$(docker image inspect -f '{{ .Id }}' "$IMAGE" 2>/dev/null || true)"
stage="$(mktemp -d "${TMPDIR:-/tmp}/agora-image.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
root="$stage/root"
mkdir -p "$root/usr/local/bin" "$root/etc"

# Strip copies; the target directory's binaries keep their line tables.
objcopy --strip-all "$BIN" "$root/usr/local/bin/agora"
objcopy --strip-all "$NODE_BIN" "$root/usr/local/bin/agora-node"
chmod 0755 "$root/usr/local/bin/agora" "$root/usr/local/bin/agora-node"

# Exactly what ldd lists: "name => /path (addr)" lines, and the loader's own
# "/lib64/ld-linux-x86-64.so.2 (addr)" line; linux-vdso has no file.
# (One file per ldd call: given several, it prints a "file:" line before each.)
libs="$(for f in "$root/usr/local/bin/agora" "$root/usr/local/bin/agora-node"; do ldd "$f" 2>/dev/null; done | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u || true)"
if [ -z "$libs" ]; then
  ldd "$root/usr/local/bin/agora-node" 2>&1 | grep -q "not a dynamic executable" || die "ldd listed no libraries for $NODE_BIN"
fi
for lib in $libs; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

# A minimal /etc: the unprivileged user, and name resolution through files
# then DNS (Docker mounts its own /etc/hosts and /etc/resolv.conf over these).
cat > "$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
agora:x:10001:10001:agora:/data:/sbin/nologin
PASSWD
cat > "$root/etc/group" <<'GROUP'
root:x:0:
agora:x:10001:
GROUP
cat > "$root/etc/nsswitch.conf" <<'NSS'
passwd: files
group:  files
hosts:  files dns
NSS
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
chmod 0644 "$root"/etc/*

# Owners are set in the archive, so this works for a user who is not root.
own="$stage/own"
mkdir -p "$own/data" "$own/tmp"
chmod 0700 "$own/data"
chmod 1777 "$own/tmp"
ctx="$stage/context"
mkdir -p "$ctx"
tar --numeric-owner --owner=0 --group=0 -C "$root" -cf "$ctx/rootfs.tar" .
tar --numeric-owner --owner=0 --group=0 -C "$own" -rf "$ctx/rootfs.tar" tmp
tar --numeric-owner --owner=10001 --group=10001 -C "$own" -rf "$ctx/rootfs.tar" data
cp "$here/Dockerfile" "$ctx/Dockerfile"

version="$("$BIN" --version 2>/dev/null | awk '{ print $2 }')"
echo "build-image: building $IMAGE from $BIN and $NODE_BIN (stripped $(du -h "$root/usr/local/bin/agora" | cut -f1) and $(du -h "$root/usr/local/bin/agora-node" | cut -f1), $(echo "$libs" | grep -c . || true) shared libraries)" >&2
docker build -q -t "$IMAGE" \
  --label "org.agora.source=$stamp" \
  --label "org.opencontainers.image.title=agora" \
  --label "org.opencontainers.image.version=${version:-unknown}" \
  "$ctx" 2> >(grep -v -e '^DEPRECATED: The legacy builder' -e 'Install the buildx component' -e 'docs.docker.com/go/buildx' -e '^ *$' >&2) >/dev/null
# The image this one replaces, if nothing uses it any more.
new_id="$(docker image inspect -f '{{ .Id }}' "$IMAGE")"
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  docker image rm "$old_id" >/dev/null 2>&1 || true
fi
size="$(docker image inspect -f '{{ .Size }}' "$IMAGE")"
echo "build-image: $IMAGE built: $((size / 1024 / 1024)) MiB ($size bytes)" >&2
