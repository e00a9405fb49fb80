//go:build tools

// Package tools pins the Prometheus Pushgateway the metrics tests push to and scrape back. The
// blank import keeps `go mod tidy` from dropping the requirement; the build tag keeps this file out
// of every build. Build it with scripts/install-pushgateway.sh, never with `go install pkg@version`:
// that form asks the module proxy for the @v/list, which is refused on some networks.
package tools

import _ "github.com/prometheus/pushgateway"
