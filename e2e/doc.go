// Package e2e holds end-to-end tests that drive a real server through
// unmodified clients: sysbench (sysbench_test.go) and the mariadb
// command-line client (cli_test.go). It has no code of its own.
//
// Every test starts its own server through testkit. The target is basalt,
// built from this module, unless BASALT_E2E_TARGET=mariadb, which runs the
// same tests against a throwaway MariaDB to validate them. See
// config_test.go for the variables.
package e2e
