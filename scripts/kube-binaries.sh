#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kube-controller-manager)
# from source through the Go module proxy into a cache directory named by
# version, and does nothing when the three binaries are already there: CI
# builds them once per machine. internal/kubetest finds them in the same place
# (or in $SOAKD_KUBE_BIN_DIR).
#
# Measured on this repository's 2 shared cores with the modules already
# downloaded and an empty build cache: kube-apiserver 298 s,
# kube-controller-manager 88 s, etcd 28 s (414 s in all); the issue measured
# about 13 min from nothing, downloads included. -trimpath -ldflags='-s -w'
# keeps the three at 114, 101 and 24 MiB.
set -euo pipefail
cd "$(dirname "$0")/kubebuild"
k8s=$(sed -n 's/^require k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' go.mod)
etcd=$(sed -n 's/^require go.etcd.io\/etcd\/server\/v3 \(v[0-9.]*\)$/\1/p' etcd/go.mod)
dir=${SOAKD_KUBE_BIN_DIR:-${SOAKD_KUBE_CACHE:-$HOME/.cache/soakd/kube}/$k8s-etcd-$etcd}
if [ -x "$dir/etcd" ] && [ -x "$dir/kube-apiserver" ] && [ -x "$dir/kube-controller-manager" ]; then
	echo "kube-binaries: $k8s and etcd $etcd are in $dir"
	exit 0
fi
mkdir -p "$dir"
build() { # build NAME PACKAGE in the current module, timed
	local start=$SECONDS
	go build -trimpath -ldflags='-s -w' -o "$dir/$1.tmp" "$2"
	mv "$dir/$1.tmp" "$dir/$1"
	echo "kube-binaries: built $1 in $((SECONDS - start)) s"
}
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
(cd etcd && build etcd .)
echo "kube-binaries: $k8s and etcd $etcd are in $dir"
