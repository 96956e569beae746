package mvcc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/kv/kvtest"
	"github.com/basalt-db/basalt/tso"
	"github.com/cockroachdb/datadriven"
)

// TestMVCC runs the command scripts in testdata/. Each file starts from an
// empty in-memory engine. The commands:
//
//	1pc start=T commit=T            one-phase commit of the mutations below
//	prewrite start=T primary=K [ttl=MS] [for-update=T] [min-commit=T]
//	  [async-commit [secondaries=(K,...)]] [try-1pc] [max-commit=T] [max-ts=T]
//	  (mutation lines: put K V | delete K | insert K V | lock K, with a
//	  trailing "pessimistic" when the key holds the txn's pessimistic lock;
//	  check-not-exists K). async-commit and try-1pc let the store choose the
//	  commit ts from max-ts, the store's max ts (default 0); the result
//	  tells what it chose: min-commit=T, 1pc commit=T, or fallback.
//	commit start=T commit=T keys=(K,...)
//	rollback start=T keys=(K,...)
//	get k=K ts=T [resolved=(T,...)] [committed=(T,...)]
//	scan ts=T [start=K] [end=K] [reverse] [resolved=(T,...)] [committed=(T,...)]
//	lock txn=T keys=(K,...) for-update=T [primary=K] [wait=DUR|nowait] [async]
//	  [min-commit=T] [only-if-exists] [values]
//	  (values: each key's newest committed value, as the lock reads it)
//	pessimistic-rollback txn=T keys=(K,...) for-update=T
//	await txn=T                     result of txn T's async command
//	waiting txn=T                   whom txn T waits for
//	advance DUR                     move the manual clock
//	check-txn-status primary=K lock=T current=T [caller=T] [rollback-if-not-exist]
//	  [resolving-pessimistic] [verify-primary] [force-sync-commit]
//	heartbeat primary=K start=T ttl=MS
//	cleanup k=K start=T current=T
//	check-secondary-locks start=T keys=(K,...)
//	scan-locks [start=K] [end=K] [limit=N] [max-ts=T]
//	resolve-lock start=T commit=T keys=(K,...)
//	gc safe-point=T [start=K] [end=K]
//	delete-range start=K end=K      drop every record of [start, end)
//	dump                            every record of every column family
//	cache-enable [limit=N]          go on with a one-phase-only store with a
//	                                latest-version cache of N bytes
//	cache-load prefix=K [during-start=T during-commit=T]
//	                                load the cache's chunk of prefix K; with
//	                                during-*, commit the input's put K V and
//	                                delete K lines once the loader has read
//	                                the engine, before it fills the chunk
//	cache                           the cache's chunks and records
//	cache-stats                     the cache's LatestCacheStats
//	ingest-at ts=T start=K end=K    ingest versions committed at the past ts
//	                                T into [start, end) (IngestAt); input
//	                                lines: put K V, in key order
//
// With the cache enabled, a scan answered from the cache says so.
//
// Timestamps are integers, or NNNp for NNN physical milliseconds. Keys and
// values are written as Go-quoted strings when they need escapes, and
// "x*300" stands for 300 x's.
func TestMVCC(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newHarness()
		datadriven.RunTest(t, path, h.run)
	})
}

type harness struct {
	eng   *MemEngine
	clock *manualClock
	s     *Store

	mu    sync.Mutex
	async map[uint64]chan string
}

// dumpCache lists the latest-version cache's chunks in key order, each
// with its records: key=value@commitTS, or key=<delete>@commitTS.
func (h *harness) dumpCache() string {
	chunks := h.s.cache.all()
	slices.SortFunc(chunks, func(a, b *chunk) int { return bytes.Compare(a.prefix, b.prefix) })
	var b strings.Builder
	for _, ch := range chunks {
		fmt.Fprintf(&b, "chunk %s complete=%t\n", kvtest.Format(ch.prefix), ch.complete.Load())
		for _, sl := range *ch.slots.Load() {
			rec := sl.rec.Load()
			v := "<delete>"
			if rec.w.Kind == WritePut {
				v = "<in default>"
				if rec.w.HasShortValue {
					v = kvtest.Format(rec.w.ShortValue)
				}
			}
			fmt.Fprintf(&b, "  %s=%s@%d\n", kvtest.Format(sl.key), v, rec.commitTS)
		}
	}
	if b.Len() == 0 {
		return "(empty)"
	}
	return b.String()
}

func newHarness() *harness {
	eng := NewMemEngine()
	clock := &manualClock{}
	s, err := NewStore(&fileEngine{MemEngine: eng}, clock, Options{Sync: true})
	if err != nil {
		panic(err)
	}
	return &harness{eng: eng, clock: clock, s: s, async: map[uint64]chan string{}}
}

func (h *harness) run(t *testing.T, td *datadriven.TestData) string {
	ctx := context.Background()
	ts := func(key string) uint64 {
		arg, ok := td.Arg(key)
		if !ok {
			t.Fatalf("%s: missing %s=", td.Pos, key)
		}
		return parseTS(t, arg.SingleVal(t))
	}
	str := func(key string) []byte {
		arg, ok := td.Arg(key)
		if !ok {
			return nil
		}
		return kvtest.Parse(t, arg.SingleVal(t))
	}
	keys := func() [][]byte {
		arg, ok := td.Arg("keys")
		if !ok {
			t.Fatalf("%s: missing keys=", td.Pos)
		}
		var ks [][]byte
		for _, v := range arg.Vals {
			ks = append(ks, kvtest.Parse(t, v))
		}
		return ks
	}
	txn := func() uint64 { return ts("txn") }
	tsList := func(key string) []uint64 {
		arg, _ := td.Arg(key)
		var l []uint64
		for _, v := range arg.Vals {
			l = append(l, parseTS(t, v))
		}
		return l
	}
	readLocks := func() *ReadLocks {
		if !td.HasArg("resolved") && !td.HasArg("committed") {
			return nil
		}
		return &ReadLocks{Resolved: tsList("resolved"), Committed: tsList("committed")}
	}

	switch td.Cmd {
	case "1pc", "prewrite":
		req := &PrewriteRequest{StartTS: ts("start"), LockTTL: 3000}
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				t.Fatalf("%s: bad mutation %q", td.Pos, line)
			}
			m := kv.Mutation{Key: kvtest.Parse(t, f[1])}
			rest := f[2:]
			if f[0] == "check-not-exists" {
				req.NotExist = append(req.NotExist, m.Key)
				continue
			}
			switch f[0] {
			case "put", "insert":
				if len(rest) == 0 {
					t.Fatalf("%s: %s needs a value", td.Pos, f[0])
				}
				m.Op, m.Value, rest = kv.OpPut, kvtest.Parse(t, rest[0]), rest[1:]
				if f[0] == "insert" {
					m.Op = kv.OpInsert
				}
			case "delete":
				m.Op = kv.OpDelete
			case "lock":
				m.Op = kv.OpLock
			default:
				t.Fatalf("%s: unknown mutation %q", td.Pos, f[0])
			}
			for _, flag := range rest {
				if flag == "covered" {
					m.Covered = true
				}
			}
			req.Mutations = append(req.Mutations, m)
			req.Pessimistic = append(req.Pessimistic, slices.Contains(rest, "pessimistic"))
		}
		if len(req.Mutations) > 0 {
			req.Primary = req.Mutations[0].Key
		}
		if p := str("primary"); p != nil {
			req.Primary = p
		}
		if td.HasArg("ttl") {
			td.ScanArgs(t, "ttl", &req.LockTTL)
		}
		if td.HasArg("for-update") {
			req.ForUpdateTS = ts("for-update")
		}
		if td.HasArg("min-commit") {
			req.MinCommitTS = ts("min-commit")
		}
		if !anyTrue(req.Pessimistic) {
			req.Pessimistic = nil
		}
		if td.Cmd == "prewrite" {
			req.AsyncCommit, req.TryOnePC = td.HasArg("async-commit"), td.HasArg("try-1pc")
			if td.HasArg("secondaries") {
				arg, _ := td.Arg("secondaries")
				for _, v := range arg.Vals {
					req.Secondaries = append(req.Secondaries, kvtest.Parse(t, v))
				}
			}
			if td.HasArg("max-commit") {
				req.MaxCommitTS = ts("max-commit")
			}
			var maxTS uint64
			if td.HasArg("max-ts") {
				maxTS = ts("max-ts")
			}
			res, err := h.s.Prewrite(ctx, req, func() uint64 { return maxTS })
			if err != nil || !req.AsyncCommit && !req.TryOnePC {
				return result(err)
			}
			out := "ok fallback"
			switch {
			case res.OnePCCommitTS != 0:
				out = "ok 1pc commit=" + fmtTS(res.OnePCCommitTS)
			case res.MinCommitTS != 0:
				out = "ok min-commit=" + fmtTS(res.MinCommitTS)
			}
			if res.Committed {
				out += " (committed before)"
			}
			return out
		}
		commitTS := ts("commit")
		next := func() (uint64, error) { return commitTS, nil }
		wait := h.wait(t, td)
		return h.maybeAsync(t, td, req.StartTS, func() string {
			_, err := h.s.OnePhaseCommit(ctx, req, next, wait)
			return result(err)
		})

	case "commit":
		return result(h.s.Commit(ctx, keys(), ts("start"), ts("commit")))

	case "rollback":
		return result(h.s.Rollback(ctx, keys(), ts("start")))

	case "get":
		var v []byte
		var err error
		if rl := readLocks(); rl != nil {
			v, err = h.s.GetWith(ctx, str("k"), ts("ts"), rl)
		} else {
			v, err = h.s.Get(ctx, str("k"), ts("ts"))
		}
		if err != nil {
			return result(err)
		}
		return kvtest.Format(v)

	case "scan":
		var start, end []byte
		if td.HasArg("start") {
			start = str("start")
		}
		if td.HasArg("end") {
			end = str("end")
		}
		var sc *Scanner
		var err error
		if rl := readLocks(); rl != nil {
			sc, err = h.s.ScanWith(ctx, start, end, ts("ts"), td.HasArg("reverse"), rl)
		} else {
			sc, err = h.s.Scan(ctx, start, end, ts("ts"), td.HasArg("reverse"))
		}
		if err != nil {
			return result(err)
		}
		defer sc.Close()
		var b strings.Builder
		for ; sc.Valid(); sc.Next() {
			fmt.Fprintf(&b, "%s=%s\n", kvtest.Format(sc.Key()), kvtest.Format(sc.Value()))
		}
		if sc.Err() != nil {
			fmt.Fprintf(&b, "%s\n", result(sc.Err()))
		}
		if h.s.cache != nil && sc.slots != nil {
			b.WriteString("(from the cache)\n")
		}
		if b.Len() == 0 {
			return "(empty)"
		}
		return b.String()

	case "lock":
		req := &PessimisticLockRequest{Keys: keys(), StartTS: txn(), ForUpdateTS: ts("for-update"), LockTTL: 3000,
			LockOnlyIfExists: td.HasArg("only-if-exists")}
		if td.HasArg("min-commit") {
			req.MinCommitTS = ts("min-commit")
		}
		req.Primary = req.Keys[0]
		if p := str("primary"); p != nil {
			req.Primary = p
		}
		var values strings.Builder
		if td.HasArg("values") {
			req.Value = func(key, value []byte, found bool) {
				if found {
					fmt.Fprintf(&values, "\n%s=%s", kvtest.Format(key), kvtest.Format(value))
				} else {
					fmt.Fprintf(&values, "\n%s: none", kvtest.Format(key))
				}
			}
		}
		wait := h.wait(t, td)
		return h.maybeAsync(t, td, req.StartTS, func() string {
			return result(h.s.PessimisticLock(ctx, req, wait)) + values.String()
		})

	case "pessimistic-rollback":
		return result(h.s.PessimisticRollback(ctx, keys(), txn(), ts("for-update")))

	case "await":
		h.mu.Lock()
		ch, ok := h.async[txn()]
		delete(h.async, txn())
		h.mu.Unlock()
		if !ok {
			t.Fatalf("%s: txn %d has nothing running", td.Pos, txn())
		}
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			return "still waiting after 10s"
		}

	case "waiting":
		if holder, ok := h.s.Waits().WaitingFor(txn()); ok {
			return fmt.Sprintf("waiting for txn %d", holder)
		}
		return "not waiting"

	case "advance":
		d, err := time.ParseDuration(td.CmdArgs[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		h.clock.advance(d)
		return "ok"

	case "check-txn-status":
		req := &CheckTxnStatusRequest{Primary: str("primary"), LockTS: ts("lock"), CurrentTS: ts("current"),
			RollbackIfNotExist:       td.HasArg("rollback-if-not-exist"),
			ResolvingPessimisticLock: td.HasArg("resolving-pessimistic"),
			VerifyIsPrimary:          td.HasArg("verify-primary"),
			ForceSyncCommit:          td.HasArg("force-sync-commit")}
		if td.HasArg("caller") {
			req.CallerStartTS = ts("caller")
		}
		st, err := h.s.CheckTxnStatus(ctx, req)
		if err != nil {
			return result(err)
		}
		out := st.State.String()
		switch st.State {
		case TxnCommitted:
			out += " commit=" + fmtTS(st.CommitTS)
		case TxnLocked:
			out += fmt.Sprintf(" ttl=%d", st.TTL)
			if st.Lock.MinCommitTS != 0 {
				out += " min-commit=" + fmtTS(st.Lock.MinCommitTS)
			}
			out += fmtAsync(st.Lock.UseAsyncCommit, st.Lock.Secondaries)
		}
		if st.Action != ActionNone {
			out += " action=" + st.Action.String()
		}
		return out

	case "heartbeat":
		var ttl uint64
		td.ScanArgs(t, "ttl", &ttl)
		got, err := h.s.TxnHeartBeat(ctx, str("primary"), ts("start"), ttl)
		if err != nil {
			return result(err)
		}
		return fmt.Sprintf("ttl=%d", got)

	case "cleanup":
		return result(h.s.Cleanup(ctx, str("k"), ts("start"), ts("current")))

	case "check-secondary-locks":
		res, err := h.s.CheckSecondaryLocks(ctx, keys(), ts("start"))
		switch {
		case err != nil:
			return result(err)
		case res.CommitTS != 0:
			return "committed commit=" + fmtTS(res.CommitTS)
		case res.Locks == nil:
			return "rolled back"
		}
		var b strings.Builder
		for _, l := range res.Locks {
			fmt.Fprintf(&b, "locked %s\n", fmtLock(l))
		}
		return b.String()

	case "scan-locks":
		var limit int
		if td.HasArg("limit") {
			td.ScanArgs(t, "limit", &limit)
		}
		maxTS := uint64(math.MaxUint64)
		if td.HasArg("max-ts") {
			maxTS = ts("max-ts")
		}
		var start, end []byte
		if td.HasArg("start") {
			start = str("start")
		}
		if td.HasArg("end") {
			end = str("end")
		}
		locks, err := h.s.ScanLocks(start, end, limit, func(l *LockInfo) bool { return l.StartTS <= maxTS })
		if err != nil {
			return result(err)
		}
		var b strings.Builder
		for _, l := range locks {
			fmt.Fprintf(&b, "%s\n", fmtLock(l))
		}
		if b.Len() == 0 {
			return "(empty)"
		}
		return b.String()

	case "resolve-lock":
		return result(h.s.ResolveLock(ctx, keys(), ts("start"), ts("commit")))

	case "gc":
		var start, end []byte
		if td.HasArg("start") {
			start = str("start")
		}
		if td.HasArg("end") {
			end = str("end")
		}
		st, err := h.s.GCRange(start, end, ts("safe-point"))
		if err != nil {
			return result(err)
		}
		return fmt.Sprintf("keys=%d deleted-writes=%d deleted-values=%d", st.Keys, st.DeletedWrites, st.DeletedDefault)

	case "delete-range":
		return result(h.s.DeleteRange(str("start"), str("end")))

	case "dump":
		return h.dump(t)

	case "cache-enable":
		limit := int64(1 << 20)
		if td.HasArg("limit") {
			td.ScanArgs(t, "limit", &limit)
		}
		s, err := NewStore(&fileEngine{MemEngine: h.eng}, h.clock, Options{Sync: true, OnePhaseOnly: true, LatestCacheSize: limit})
		if err == nil {
			h.s = s
		}
		return result(err)

	case "write-filter":
		s, err := NewStore(&fileEngine{MemEngine: h.eng}, h.clock, Options{Sync: true, OnePhaseOnly: true, WriteFilterFloor: ts("floor")})
		if err == nil {
			h.s = s
		}
		return result(err)

	case "cache-load":
		var during func()
		if td.HasArg("during-start") {
			during = func() {
				ms := h.parseMutations(t, td)
				commitTS := ts("during-commit")
				_, err := h.s.OnePhaseCommit(ctx, &PrewriteRequest{Mutations: ms, StartTS: ts("during-start")},
					func() (uint64, error) { return commitTS, nil }, 0)
				if err != nil {
					t.Fatalf("%s: commit during the load: %v", td.Pos, err)
				}
			}
		}
		h.s.cache.loadWith(h.eng, str("prefix"), 0, during)
		return h.dumpCache()

	case "cache":
		return h.dumpCache()

	case "cache-stats":
		st, _ := h.s.LatestCacheStats()
		return fmt.Sprintf("chunks=%d bytes=%d loads=%d evictions=%d", st.Chunks, st.Bytes, st.Loads, st.Evictions)

	case "ingest-at":
		return result(h.ingestAt(t, td, ts("ts"), str("start"), str("end")))
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

func anyTrue(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}

func (h *harness) wait(t *testing.T, td *datadriven.TestData) time.Duration {
	switch {
	case td.HasArg("nowait"):
		return 0
	case td.HasArg("wait"):
		var s string
		td.ScanArgs(t, "wait", &s)
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return -1
}

// maybeAsync runs f, or with the async argument starts it in the background
// and reports "waiting" once txn is parked on a lock (or f's result if f
// finishes first).
func (h *harness) maybeAsync(t *testing.T, td *datadriven.TestData, txn uint64, f func() string) string {
	if !td.HasArg("async") {
		return f()
	}
	ch := make(chan string, 1)
	go func() { ch <- f() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := h.s.Waits().WaitingFor(txn); ok {
			h.mu.Lock()
			h.async[txn] = ch
			h.mu.Unlock()
			return "waiting"
		}
		select {
		case r := <-ch:
			return r
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatalf("%s: txn %d neither finished nor waited", td.Pos, txn)
	return ""
}

func (h *harness) dump(t *testing.T) string {
	var b strings.Builder
	keys, vals := h.eng.Dump(CFLock)
	for i, k := range keys {
		uk, err := decodeKey(k)
		if err != nil {
			t.Fatal(err)
		}
		l, err := decodeLock(vals[i])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "lock %s: %s start=%s primary=%s ttl=%d", kvtest.Format(uk), l.Kind, fmtTS(l.StartTS), kvtest.Format(l.Primary), l.TTL)
		if l.ForUpdateTS != 0 {
			fmt.Fprintf(&b, " for-update=%d", l.ForUpdateTS)
		}
		if l.MinCommitTS != 0 {
			fmt.Fprintf(&b, " min-commit=%s", fmtTS(l.MinCommitTS))
		}
		b.WriteString(fmtAsync(l.UseAsyncCommit, l.Secondaries))
		if l.HasShortValue {
			fmt.Fprintf(&b, " value=%s", kvtest.Format(l.ShortValue))
		}
		b.WriteString("\n")
	}
	keys, vals = h.eng.Dump(CFWrite)
	for i, k := range keys {
		ek, ts, err := splitVersionKey(k)
		if err != nil {
			t.Fatal(err)
		}
		uk, err := decodeKey(ek)
		if err != nil {
			t.Fatal(err)
		}
		w, err := decodeWrite(vals[i])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "write %s@%s: %s start=%s", kvtest.Format(uk), fmtTS(ts), w.Kind, fmtTS(w.StartTS))
		if w.OverlappedRollback {
			b.WriteString(" +rollback")
		}
		if w.HasShortValue {
			fmt.Fprintf(&b, " value=%s", kvtest.Format(w.ShortValue))
		}
		b.WriteString("\n")
	}
	keys, vals = h.eng.Dump(CFDefault)
	for i, k := range keys {
		ek, ts, err := splitVersionKey(k)
		if err != nil {
			t.Fatal(err)
		}
		uk, err := decodeKey(ek)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "default %s@%s: %s\n", kvtest.Format(uk), fmtTS(ts), kvtest.Format(vals[i]))
	}
	if b.Len() == 0 {
		return "(empty)"
	}
	return b.String()
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	var le *LockedError
	var wc *kv.WriteConflictError
	var dl *kv.DeadlockError
	var ke *kv.KeyExistsError
	var ce *CommittedError
	var cte *CommitTSExpiredError
	var pm *PrimaryMismatchError
	switch {
	case errors.As(err, &cte):
		return fmt.Sprintf("error: commit ts %s of %s expired: min commit ts %s", fmtTS(cte.CommitTS), kvtest.Format(cte.Key), fmtTS(cte.MinCommitTS))
	case errors.As(err, &pm):
		return fmt.Sprintf("error: %s is not the primary of txn %s: %s is", kvtest.Format(pm.Lock.Key), fmtTS(pm.Lock.StartTS), kvtest.Format(pm.Lock.Primary))
	case errors.As(err, &dl):
		return fmt.Sprintf("error: deadlock: txn %d waits for %d on %s, cycle %v", dl.StartTS, dl.Holder, kvtest.Format(dl.Key), dl.Cycle)
	case errors.Is(err, kv.ErrLockWaitTimeout):
		return "error: lock wait timeout"
	case errors.As(err, &le):
		return fmt.Sprintf("error: key %s locked by txn %s (%s, primary %s)", kvtest.Format(le.Lock.Key), fmtTS(le.Lock.StartTS), le.Lock.Kind, kvtest.Format(le.Lock.Primary))
	case errors.As(err, &wc):
		return fmt.Sprintf("error: write conflict on %s: txn %d committed at %d", kvtest.Format(wc.Key), wc.ConflictStartTS, wc.ConflictCommitTS)
	case errors.As(err, &ke):
		return fmt.Sprintf("error: key %s exists", kvtest.Format(ke.Key))
	case errors.As(err, &ce):
		return fmt.Sprintf("error: %s already committed at %d", kvtest.Format(ce.Key), ce.CommitTS)
	case errors.Is(err, kv.ErrNotFound):
		return "not found"
	case errors.Is(err, kv.ErrTxnAborted):
		return "error: txn aborted"
	case errors.Is(err, ErrTxnNotFound):
		return "error: txn not found"
	}
	return "error: " + err.Error()
}

// fmtLock prints a lock as scan-locks and check-secondary-locks show it.
func fmtLock(l LockInfo) string {
	s := fmt.Sprintf("%s: %s start=%s primary=%s ttl=%d", kvtest.Format(l.Key), l.Kind, fmtTS(l.StartTS), kvtest.Format(l.Primary), l.TTL)
	if l.ForUpdateTS != 0 {
		s += fmt.Sprintf(" for-update=%s", fmtTS(l.ForUpdateTS))
	}
	if l.MinCommitTS != 0 {
		s += " min-commit=" + fmtTS(l.MinCommitTS)
	}
	return s + fmtAsync(l.UseAsyncCommit, l.Secondaries)
}

// fmtAsync prints an async-commit lock's mark: " async", with its
// secondaries if it has any.
func fmtAsync(async bool, secondaries [][]byte) string {
	if !async {
		return ""
	}
	if len(secondaries) == 0 {
		return " async"
	}
	ks := make([]string, len(secondaries))
	for i, k := range secondaries {
		ks[i] = kvtest.Format(k)
	}
	return " async secondaries=(" + strings.Join(ks, ",") + ")"
}

func parseTS(t *testing.T, s string) uint64 {
	if ms, ok := strings.CutSuffix(s, "p"); ok {
		v, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return tso.ComposeTS(v, 0)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fmtTS prints a timestamp the way scripts write it.
func fmtTS(ts uint64) string {
	if tso.PhysicalMs(ts) > 0 && tso.Logical(ts) == 0 {
		return fmt.Sprintf("%dp", tso.PhysicalMs(ts))
	}
	return strconv.FormatUint(ts, 10)
}

// manualClock fires timers only when advanced.
type manualClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []*manualTimer
}

type manualTimer struct {
	clock   *manualClock
	at      time.Duration
	c       chan time.Time
	stopped bool
}

func (c *manualClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{clock: c, at: c.now + d, c: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	return t
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	var fired []*manualTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.stopped {
			continue
		}
		if t.at <= c.now {
			fired = append(fired, t)
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	for _, t := range fired {
		t.c <- time.Time{}
	}
}

func (t *manualTimer) C() <-chan time.Time { return t.c }
func (t *manualTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	t.stopped = true
	return true
}

// parseMutations reads the input's put K V and delete K lines.
func (h *harness) parseMutations(t *testing.T, td *datadriven.TestData) []kv.Mutation {
	var ms []kv.Mutation
	for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "put":
			ms = append(ms, kv.Mutation{Op: kv.OpPut, Key: kvtest.Parse(t, f[1]), Value: kvtest.Parse(t, f[2])})
		case len(f) == 2 && f[0] == "delete":
			ms = append(ms, kv.Mutation{Op: kv.OpDelete, Key: kvtest.Parse(t, f[1])})
		default:
			t.Fatalf("%s: bad mutation %q", td.Pos, line)
		}
	}
	return ms
}
