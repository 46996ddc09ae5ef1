// Package labtest holds the test helpers that need the lab's data and backends: the shared test
// backend (Backend, from $GOMLX_BACKEND) and deterministic records for the tests of cifarlib,
// runs and training. It imports data and backends, so their own tests do not use it (an import
// cycle); see internal/layers.
package labtest
