// Command soakd proves, or disproves, that a GraphQL release costs no more
// CPU, GC and throughput than it should, measured against a REST control
// group over the same data. See README.md.
//
// main is the only place that calls os.Exit; the command line is
// internal/cli.
package main

import (
	_ "embed"
	"os"

	"github.com/soakd/soakd/internal/cli"
)

// defaultConfig is config.yaml, the embedded defaults every user file is
// decoded on top of.
//
//go:embed config.yaml
var defaultConfig []byte

func main() {
	os.Exit(int(cli.Run(defaultConfig, os.Args[1:], os.Stdout, os.Stderr)))
}
