#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, only those missing.
# As root directly, otherwise through sudo. Safe to run again.
set -euo pipefail

# libsqlcipher-dev: the offline store's storage engine (SQLCipher 3.4.1 on Debian 12; the storage spike links it too);
# libssl-dev: libcrypto, which the SQLCipher bridge links to fetch its page cipher and HMAC once (docs/notes/storage.md);
# libhiredis-dev, redis-server and redis-tools (redis-cli, which creates the test cluster): the technical cache's Redis tier and its tests.
# nginx-light and openssl: the transport and TLS tests (nginx in front of the fixture producer, certificates made by `openssl`).
packages=(pkg-config libcurl4-openssl-dev liblmdb-dev libsqlcipher-dev libssl-dev libhiredis-dev redis-server redis-tools nginx-light openssl curl)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
install_mock_sap() {
    # mock-sap (PyPI): an SAP-shaped OData producer the tests run beside our own (Fixtures/…/MockSAP.swift).
    local venv
    venv="$(cd "$(dirname "$0")/.." && pwd)/.build/mock-sap"
    if [ -x "$venv/bin/mock-sap" ] && "$venv/bin/mock-sap" --version 2>/dev/null | grep -q "0.22.0"; then return 0; fi
    echo "install-deps: installing mock-sap==0.22.0 into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check mock-sap==0.22.0
}

if [ ${#missing[@]} -eq 0 ]; then install_mock_sap; exit 0; fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_mock_sap
