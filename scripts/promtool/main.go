// Command promtool-check-rules does what `promtool check rules FILE...` does, with the same
// packages: it parses each Prometheus rules file with model/rulefmt, which validates the YAML
// (unknown fields refused), every PromQL expression with the promql parser, every label and
// annotation template, and the `for`/`keep_firing_for` durations. It prints promtool's own
// report ("Checking FILE", "SUCCESS: N rules found" or "FAILED:" and the errors) and exits 1 when
// a file fails.
//
// Why not promtool itself: cmd/promtool imports all of Prometheus's service discovery (the AWS,
// Azure, GCP, Kubernetes... SDKs). Its cold build from github.com/prometheus/prometheus v0.316.0
// was still compiling the AWS SDK after 14 minutes on the project's shared 2-core machine
// (module download 300 MB zipped, 1.9 GB unpacked after `go mod tidy`), so it was stopped. This
// checker needs only rulefmt and the promql packages. What it does not do: `promtool test rules`
// (the rule unit tests need the rule manager and a test storage) and promtool's duplicate-rule lint.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/version"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "--version" {
		fmt.Println(version.Print("promtool-check-rules"))
		return
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(os.Stderr, "usage: promtool-check-rules FILE...  (what `promtool check rules FILE...` checks)")
		os.Exit(2)
	}
	// promtool's defaults: no experimental functions, UTF-8 metric and label names.
	p := parser.NewParser(parser.Options{})
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	failed := false
	for _, file := range args {
		fmt.Println("Checking", file)
		groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, p, logger)
		if len(errs) > 0 {
			failed = true
			fmt.Fprintln(os.Stderr, "  FAILED:")
			fmt.Fprintln(os.Stderr, errors.Join(errs...).Error())
			fmt.Println()
			continue
		}
		rules := 0
		for _, group := range groups.Groups {
			rules += len(group.Rules)
		}
		fmt.Printf("  SUCCESS: %d rules found\n", rules)
		fmt.Println()
	}
	if failed {
		os.Exit(1)
	}
}
