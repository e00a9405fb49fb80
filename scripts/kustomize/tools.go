//go:build tools

// Package tools pins the real kustomize the manifest tests render k8s/ with. The blank import keeps
// `go mod tidy` from dropping the requirement; the build tag keeps this file out of every build.
// Build it with scripts/install-kustomize.sh, never with `go install pkg@version`: that form asks
// the module proxy for the @v/list, which is refused on some networks.
package tools

import _ "sigs.k8s.io/kustomize/kustomize/v5"
