//go:build tools

// Package tools pins fake-gcs-server, the Cloud Storage stand-in the gs:// CSV sink tests run
// against. The blank import keeps `go mod tidy` from dropping the requirement; the build tag keeps
// this file out of every build. Build it with scripts/install-fake-gcs-server.sh, never with
// `go install pkg@version`: that form asks the module proxy for the @v/list, which is refused on
// some networks.
package tools

import _ "github.com/fsouza/fake-gcs-server"
