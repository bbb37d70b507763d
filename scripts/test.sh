#!/usr/bin/env bash
# The one command that runs every check and test of candor (CI runs exactly this via .ci/run).
# It installs what the tests need beyond Rust (scripts/install-test-deps.sh: Chromium, Prometheus,
# Java and Maven, kubernetes-validate, hadolint), then runs the formatting and lint gates and the
# whole test suite in release mode (the timing tests measure the optimised engine, as users run
# it). The tests that need those tools are #[ignore = "needs X: scripts/test.sh"], so that a plain
# `cargo test` passes on a machine with only Rust; --include-ignored runs them here.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x scripts/install-test-deps.sh ]; then
  scripts/install-test-deps.sh
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --release --quiet
cargo test --workspace --release -- --include-ignored
