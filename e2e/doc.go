// Package e2e holds end-to-end tests that drive a real server through
// unmodified clients: sysbench (sysbench_test.go), the mariadb
// command-line client (cli_test.go), LOAD DATA LOCAL through the mariadb
// client and mariadb-import, compared with MariaDB (loaddata_test.go), and go-sql-driver/mysql clients that
// check transactional invariants and crash safety: acknowledged writes
// survive SIGKILL (crash_test.go), the bank test (bank_test.go) and
// concurrent increments (lostupdate_test.go), which share
// txnclient_test.go and killer_test.go; and go-tpc's TPC-C on Basalt and
// MariaDB side by side (tpcc_test.go, built only with the tpcc tag: make
// tpcc). It has no code of its own.
//
// Every test starts its own server through testkit. The target is basalt,
// built from this module, unless BASALT_E2E_TARGET names another:
// mariadb runs the same tests against a throwaway MariaDB to validate
// them; mocktikv and cluster run them on a SQL node over client-go, on
// its mock cluster or on 1 PD and 3 stores (TestSysbenchOnCluster always
// runs sysbench there, briefly). See
// config_test.go for the variables; the invariant tests have their own
// (BASALT_CRASH_CYCLES, BASALT_BANK_SECONDS, BASALT_BANK_CRASH_CYCLES,
// BASALT_LOSTUPDATE_SECONDS), described at each test.
package e2e
