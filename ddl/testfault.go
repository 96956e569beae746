package ddl

import (
	"os"
	"time"
)

// A test-only switch: a SQL node started with
//
//	BASALT_TEST_DDL_BACKFILL_DELAY=<duration>
//
// in its environment waits that long in every ADD INDEX once the index is
// write-only, just before its backfill, so that a test can kill the node
// in the middle of the change (ddljob's recovery of a job whose runner
// died). Without the variable nothing waits.
const backfillDelayEnv = "BASALT_TEST_DDL_BACKFILL_DELAY"

var backfillDelay = func() time.Duration {
	d, _ := time.ParseDuration(os.Getenv(backfillDelayEnv))
	return d
}()
