//go:build tools

// Package bench pins the benchmark clients built from Go modules: bench/run
// builds go-tpc's command from the version this module requires, with the
// checksums in go.sum.
package bench

import _ "github.com/pingcap/go-tpc/cmd/go-tpc"
