// Package testkit starts real database servers for end-to-end tests: the
// basalt binary built from this module, or a throwaway MariaDB to validate a
// test against the reference server, and drives sysbench against either.
//
// Contracts:
//
//   - Every server listens on 127.0.0.1 only, on ports picked free at start,
//     with its data in a directory owned by the test (t.TempDir unless the
//     caller gives one). It is stopped by t.Cleanup: SIGTERM, then SIGKILL
//     after ten seconds. A server that does not then exit with status 0
//     fails the test.
//   - A server's stdout and stderr are kept (the last MiB) and printed when
//     the test fails.
//   - Missing external programs (mariadbd, sysbench) skip the test with the
//     apt-get command that installs them; a missing cmd/basalt skips too, so
//     the suites stay green until the binary exists.
//   - Stop, Kill and Restart must not run concurrently with each other; the
//     other methods of a Server are safe for concurrent use.
//
// The files: module.go finds the module root, build.go builds basalt once per
// test process, server.go is the process lifecycle (with ports.go,
// tailbuffer.go and proc_*.go) shared by basalt.go and mariadb.go, target.go
// picks one by name, sysbench.go runs sysbench.
package testkit
