package mvcc

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/kv"
)

// This file keeps in memory the newest committed version of every key of
// the hot chunks of the keyspace, so that reads of rows updated many times
// since the last GC need not step over their old versions.
//
// A key updated N times within GC's life time has N records in CFWrite. A
// scan reads the newest one at or below its timestamp and must then move
// past the others: a seek through every level of the LSM, for each such
// key. sysbench's oltp_read_write sends three quarters of its updates and
// of its range scans to the same 1% of rows, and those seeks took 45% of
// the server's CPU. InnoDB pays nothing for this: it updates in place and
// keeps old versions in its undo log. This cache is the in-place copy.
//
// A chunk is the range of user keys that have a prefix p, [p,
// kv.PrefixEnd(p)). A chunk is cached only if every key in it is exactly one
// byte longer than p: the row keys of a table with integer handles group
// into chunks of 256 consecutive handles. The writer of a key then finds the
// one chunk that can hold it by dropping the key's last byte; a write to a
// key of another length inside a cached chunk drops the chunk.
//
// Consistency. For each key of a complete chunk the cache holds the newest
// Put or Delete record committed. The command that commits updates it after
// its batch is applied and before it releases its latches (Store.write). A
// reader at ts has first waited out every commit in flight that could land
// at or below ts (Latches.WaitRead), and a commit that lands later has a
// commit ts above ts. So a cached record committed at or below ts is the
// newest version at or below ts; for a key whose cached record is newer,
// the reader asks the engine. This needs a store without prewrite locks
// (Options.OnePhaseOnly): a two-phase commit makes its data visible by
// removing a lock, which readers of the cache would not see. So the cache
// is the embedded store's option (Options.LatestCacheSize), not the core's.
//
// A chunk being loaded is registered first, so that commits update it while
// the loader reads the engine; the loader and the committers each keep the
// newer of two records, and readers use the chunk only once it is complete.
//
// Concurrency. Readers take no lock: each shard's chunk set is an immutable
// map replaced whole. Chunks are spread over cacheShards shards by a hash
// of their prefix, each with its own mutex, heat and map, so that loading
// or dropping a chunk copies one shard's map (1/cacheShards of the chunks)
// and crowded scans of different chunks do not wait for each other. The
// bytes of all chunks are one counter, so a load knows in O(1) whether
// anything must go; eviction then samples chunks (evictSample) rather than
// sorting them all. With a hot set larger than the cache, oltp_read_only
// after writes spent 32% of the server's CPU copying the one chunk map and
// sorting every chunk under one mutex (docs/perf-read.md).
type latestCache struct {
	limit int64 // bytes of keys and values, over all chunks

	shards  [cacheShards]cacheShard
	lengths atomic.Pointer[[]int] // prefix lengths chunks have had, ascending (never shrinks)
	lenMu   sync.Mutex            // serializes changes to lengths
	count   atomic.Int64          // chunks cached or being loaded
	size    atomic.Int64          // bytes of keys and values of those chunks
	tick    atomic.Uint64         // use clock for eviction
	evictMu sync.Mutex            // one evictor at a time

	loads, evictions atomic.Uint64 // chunks loaded, and evicted for room
}

// cacheShard holds the chunks whose prefixes hash to it.
type cacheShard struct {
	chunks atomic.Pointer[map[string]*chunk] // replaced whole under mu

	mu   sync.Mutex     // serializes changes to chunks, heat and readHeat
	heat map[string]int // crowded scans seen per chunk prefix not cached

	// Point reads heat chunks too, counted in one-second windows, so that
	// a chunk read often enough is cached even without old versions.
	readHeat   map[string]int // sampled reads per chunk prefix, this window
	readWindow int64          // the window's unix second

	_ [64]byte // keep shards' mutexes off each other's cache lines
}

// cacheShards is the number of shards; a power of two.
const cacheShards = 32

// shardOf returns the shard of the chunk of prefix p (FNV-1a).
func (c *latestCache) shardOf(p []byte) *cacheShard {
	h := uint32(2166136261)
	for _, b := range p {
		h = (h ^ uint32(b)) * 16777619
	}
	return &c.shards[h&(cacheShards-1)]
}

// lookup returns the chunk of prefix p, complete or not, or nil.
func (c *latestCache) lookup(p []byte) *chunk {
	return (*c.shardOf(p).chunks.Load())[string(p)]
}

// LatestCacheStats describes a store's latest-version cache.
type LatestCacheStats struct {
	Chunks    int    // chunks cached or being loaded
	Bytes     int64  // their keys and values, as counted against the limit
	Loads     uint64 // chunks loaded since the store opened
	Evictions uint64 // chunks evicted to stay under the limit
}

func (c *latestCache) stats() LatestCacheStats {
	return LatestCacheStats{Chunks: int(c.count.Load()), Bytes: c.size.Load(), Loads: c.loads.Load(), Evictions: c.evictions.Load()}
}

// all returns every chunk cached or being loaded, in no order.
func (c *latestCache) all() []*chunk {
	var out []*chunk
	for i := range c.shards {
		for _, ch := range *c.shards[i].chunks.Load() {
			out = append(out, ch)
		}
	}
	return out
}

// Tuning of the cache. A crowded scan is one that met at least crowdedKeys
// keys with older versions to step over; a chunk is loaded after
// heatToLoad crowded scans touched it.
const (
	crowdedKeys    = 4
	heatToLoad     = 4
	chunkMaxKeys   = 256
	maxScanChunks  = 4
	noLoad         = -1 << 30 // heat of a chunk found unfit to cache
	slotOverhead   = 96       // bytes per cached key besides key and value
	maxHeatEntries = 1 << 16  // over all shards
	// One point read in readSample of a key whose chunk is not cached is
	// counted; readHeatToLoad counted reads within a second load the
	// chunk: about 128 reads a second of at most 256 keys.
	readSample     = 16
	readHeatToLoad = 8
)

type chunk struct {
	owner       *latestCache
	prefix, end []byte // the chunk's user keys are [prefix, end)

	mu       sync.Mutex              // serializes writers, and writers with removal
	slots    atomic.Pointer[[]*slot] // sorted by key; replaced whole to add a key
	complete atomic.Bool
	dead     atomic.Bool   // removed from the cache; set under mu
	used     atomic.Uint64 // cache tick of the last read
	size     atomic.Int64  // bytes of keys and values; in owner.size while not dead
}

// slot is one key of a chunk.
type slot struct {
	key, encKey []byte
	rec         atomic.Pointer[latestRec]
}

// latestRec is a key's newest Put or Delete record.
type latestRec struct {
	commitTS uint64
	w        Write // its ShortValue is the cache's own copy
}

func newLatestCache(limit int64) *latestCache {
	c := &latestCache{limit: limit}
	c.lengths.Store(&[]int{})
	for i := range c.shards {
		sh := &c.shards[i]
		sh.chunks.Store(&map[string]*chunk{})
		sh.heat, sh.readHeat = make(map[string]int), make(map[string]int)
	}
	return c
}

// addLength adds n to the prefix lengths of chunks, if new. Lengths are
// never removed: a length no chunk has any more costs a lookup that finds
// nothing.
func (c *latestCache) addLength(n int) {
	if slices.Contains(*c.lengths.Load(), n) {
		return
	}
	c.lenMu.Lock()
	defer c.lenMu.Unlock()
	old := *c.lengths.Load()
	if slices.Contains(old, n) {
		return
	}
	ls := append(slices.Clone(old), n)
	slices.Sort(ls)
	c.lengths.Store(&ls)
}

// holding calls fn for each chunk whose range holds key, saying whether key
// has the chunk's key length. Chunks may nest: a short prefix's chunk holds
// a longer prefix's.
func (c *latestCache) holding(key []byte, fn func(ch *chunk, fits bool)) {
	for _, n := range *c.lengths.Load() {
		if n > len(key) {
			break
		}
		// n == len(key): key is the chunk's prefix itself, which does not fit.
		if ch := c.lookup(key[:n]); ch != nil {
			fn(ch, n == len(key)-1)
		}
	}
}

// search returns the index of the first slot at or after key.
func search(slots []*slot, key []byte) int {
	return sort.Search(len(slots), func(i int) bool { return bytes.Compare(slots[i].key, key) >= 0 })
}

// apply brings the cache up to date with a batch just written to the
// engine. The caller holds the latches of the batch's keys.
func (c *latestCache) apply(b *Batch) {
	if c.count.Load() == 0 {
		return
	}
	if len(b.Entries) > bigBatch {
		c.dropTouched(b)
		return
	}
	var buf []byte // the user key of an entry; chunks copy what they keep
	for i := range b.Entries {
		e := &b.Entries[i]
		if e.CF != CFWrite {
			continue
		}
		if e.End != nil {
			c.dropRange(e.Key, e.End)
			continue
		}
		encKey, ts, err := splitVersionKey(e.Key)
		if err != nil {
			c.clear()
			return
		}
		_, key, err := codec.DecodeBytes(encKey, buf[:0])
		if err != nil {
			c.clear()
			return
		}
		buf = key
		var w Write
		if !e.Delete {
			if w, err = decodeWrite(e.Value); err != nil {
				c.clear()
				return
			}
		}
		c.holding(key, func(ch *chunk, fits bool) {
			switch {
			case !fits:
				c.drop(ch)
			case e.Delete:
				// GC removes a key's newest record only if it is a Delete
				// at or below the safe point, which the cache may keep: no
				// reader is below the safe point. Anything else is
				// unexpected.
				if r := ch.lookup(key); r != nil && r.commitTS == ts && r.w.Kind != WriteDelete {
					c.drop(ch)
				}
			case w.Kind == WritePut || w.Kind == WriteDelete:
				ch.update(key, encKey, ts, w)
			default:
				// Rollback and lock records change no data, unless one
				// replaced the record the cache holds.
				if r := ch.lookup(key); r != nil && r.commitTS == ts {
					c.drop(ch)
				}
			}
		})
	}
}

// bigBatch is the size of batch past which apply drops the chunks the
// batch writes to rather than updating them. Updating copies a chunk's
// slots for every key it adds (readers hold no lock), so a bulk load of
// new rows (LOAD DATA, INSERT ... SELECT), whose own duplicate checks heat
// the chunks of the keys it adds, spent a quarter of its CPU here.
const bigBatch = 4096

// dropTouched drops, in one change, every chunk that b writes a key of.
// Dropping is always safe: a reader of a key outside the cache asks the
// engine, which holds b.
func (c *latestCache) dropTouched(b *Batch) {
	touched := map[*chunk]bool{}
	var buf []byte
	for i := range b.Entries {
		e := &b.Entries[i]
		if e.CF != CFWrite {
			continue
		}
		if e.End != nil {
			c.dropRange(e.Key, e.End)
			continue
		}
		encKey, _, err := splitVersionKey(e.Key)
		if err == nil {
			buf, err = decodeUserKey(encKey, buf[:0])
		}
		if err != nil {
			c.clear()
			return
		}
		c.holding(buf, func(ch *chunk, _ bool) { touched[ch] = true })
	}
	for ch := range touched {
		c.drop(ch)
	}
}

func decodeUserKey(encKey, buf []byte) ([]byte, error) {
	_, key, err := codec.DecodeBytes(encKey, buf)
	return key, err
}

// find returns the slot of key in ch, or nil.
func (ch *chunk) find(key []byte) *slot {
	slots := *ch.slots.Load()
	if i := search(slots, key); i < len(slots) && bytes.Equal(slots[i].key, key) {
		return slots[i]
	}
	return nil
}

// lookup returns the cached record of key in ch, or nil.
func (ch *chunk) lookup(key []byte) *latestRec {
	if s := ch.find(key); s != nil {
		return s.rec.Load()
	}
	return nil
}

// update records w, committed at ts, as key's newest record unless the
// chunk has a newer one.
func (ch *chunk) update(key, encKey []byte, ts uint64, w Write) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.put(key, encKey, ts, w, true)
}

// put is update with ch.mu held. A record committed at the same ts as the
// cached one replaces it if rewrite is set: a batch may write one version
// key twice, and the engine keeps the later write.
func (ch *chunk) put(key, encKey []byte, ts uint64, w Write, rewrite bool) {
	rec := &latestRec{commitTS: ts, w: w}
	rec.w.ShortValue = slices.Clone(w.ShortValue)
	slots := *ch.slots.Load()
	i := search(slots, key)
	if i < len(slots) && bytes.Equal(slots[i].key, key) {
		old := slots[i].rec.Load()
		if old.commitTS > ts || old.commitTS == ts && !rewrite {
			return
		}
		slots[i].rec.Store(rec)
		ch.grow(int64(len(rec.w.ShortValue) - len(old.w.ShortValue)))
		return
	}
	s := &slot{key: slices.Clone(key), encKey: slices.Clone(encKey)}
	s.rec.Store(rec)
	grown := slices.Insert(slices.Clone(slots), i, s)
	ch.slots.Store(&grown)
	ch.grow(int64(2*len(key) + len(rec.w.ShortValue) + slotOverhead))
}

// grow counts d more bytes in ch, and in the cache unless ch was removed
// from it. ch.mu is held.
func (ch *chunk) grow(d int64) {
	ch.size.Add(d)
	if !ch.dead.Load() {
		ch.owner.size.Add(d)
	}
}

// drop removes ch from the cache.
func (c *latestCache) drop(ch *chunk) {
	sh := c.shardOf(ch.prefix)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c.removeIn(sh, func(x *chunk) bool { return x == ch })
}

// clear empties the cache.
func (c *latestCache) clear() {
	c.remove(func(*chunk) bool { return true })
}

// dropRange drops the chunks that overlap the encoded key range [lo, hi).
func (c *latestCache) dropRange(lo, hi []byte) {
	start, err1 := decodeKey(lo)
	end, err2 := decodeKey(hi)
	c.remove(func(ch *chunk) bool {
		return err1 != nil || err2 != nil ||
			bytes.Compare(ch.prefix, end) < 0 && (ch.end == nil || bytes.Compare(start, ch.end) < 0)
	})
}

// remove drops the chunks that match, shard by shard.
func (c *latestCache) remove(match func(*chunk) bool) {
	for i := range c.shards {
		sh := &c.shards[i]
		if len(*sh.chunks.Load()) == 0 {
			continue // chunks are added under sh.mu, after the caller's change
		}
		sh.mu.Lock()
		c.removeIn(sh, match)
		sh.mu.Unlock()
	}
}

// removeIn drops the chunks of sh that match, with sh.mu held, and
// returns how many it dropped.
func (c *latestCache) removeIn(sh *cacheShard, match func(*chunk) bool) (n int) {
	old := *sh.chunks.Load()
	m := make(map[string]*chunk, len(old))
	for p, ch := range old {
		if !match(ch) {
			m[p] = ch
			continue
		}
		ch.mu.Lock()
		ch.dead.Store(true)
		c.size.Add(-ch.size.Load())
		ch.mu.Unlock()
		c.count.Add(-1)
		n++
	}
	if n > 0 {
		sh.chunks.Store(&m)
	}
	return n
}

// chunksOf appends to out the complete chunks that together hold [start,
// end), or returns nil if the range is not all cached.
func (c *latestCache) chunksOf(start, end []byte, out []*chunk) []*chunk {
	if len(start) == 0 || end == nil {
		return nil
	}
	if c.count.Load() == 0 {
		return nil
	}
	p := start[:len(start)-1]
	for range maxScanChunks {
		ch := c.lookup(p)
		if ch == nil || !ch.complete.Load() {
			return nil
		}
		out = append(out, ch)
		if ch.end == nil || bytes.Compare(end, ch.end) <= 0 {
			return out
		}
		if len(ch.end) != len(p) {
			return nil
		}
		p = ch.end
	}
	return nil
}

// slotsOf returns the cached keys in [start, end), or ok false if the range
// is not all cached.
func (c *latestCache) slotsOf(start, end []byte) (slots []*slot, ok bool) {
	var buf [maxScanChunks]*chunk
	chunks := c.chunksOf(start, end, buf[:0])
	if chunks == nil {
		return nil, false
	}
	now := c.tick.Add(1)
	slots = []*slot{} // not nil: a Scanner over no cached key is still cached
	for _, ch := range chunks {
		ch.used.Store(now)
		s := *ch.slots.Load()
		lo, hi := 0, len(s)
		if bytes.Compare(start, ch.prefix) > 0 {
			lo = search(s, start)
		}
		if ch.end == nil || bytes.Compare(end, ch.end) < 0 {
			hi = search(s, end)
		}
		if len(chunks) == 1 {
			return s[lo:hi:hi], true
		}
		slots = append(slots, s[lo:hi]...)
	}
	return slots, true
}

// get returns the cached slot of key, with found false if key's chunk is
// not cached; a nil slot means key has no committed version.
func (c *latestCache) get(key []byte) (sl *slot, found bool) {
	if len(key) == 0 {
		return nil, false
	}
	if c.count.Load() == 0 {
		return nil, false
	}
	ch := c.lookup(key[:len(key)-1])
	if ch == nil || !ch.complete.Load() {
		return nil, false
	}
	ch.used.Store(c.tick.Add(1))
	return ch.find(key), true
}

// noteCrowded records a crowded scan of [start, end) and loads the chunks
// that have now been crowded often enough, reading them from r.
func (c *latestCache) noteCrowded(r Reader, start, end []byte) {
	if len(start) == 0 || end == nil {
		return
	}
	var load [][]byte
	p := start[:len(start)-1]
	for range maxScanChunks {
		if c.lookup(p) == nil && c.shardOf(p).heatUp(p) {
			load = append(load, slices.Clone(p))
		}
		end2 := kv.PrefixEnd(p)
		if end2 == nil || bytes.Compare(end, end2) <= 0 || len(end2) != len(p) {
			break
		}
		p = end2
	}
	for _, p := range load {
		c.load(r, p)
	}
}

// heatUp counts a crowded scan of the chunk of prefix p, of this shard
// and not cached, and says whether the chunk should now be loaded.
func (sh *cacheShard) heatUp(p []byte) (load bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if (*sh.chunks.Load())[string(p)] != nil {
		return false // loaded meanwhile
	}
	h, seen := sh.heat[string(p)]
	if !seen && len(sh.heat) >= maxHeatEntries/cacheShards {
		clear(sh.heat)
	}
	if h < 0 {
		return false // unfit
	}
	if h++; h >= heatToLoad {
		load, h = true, 0
	}
	sh.heat[string(p)] = h
	return load
}

// noteRead counts a point read of key, whose chunk is not cached, and
// loads the chunk from r once it is read often.
func (c *latestCache) noteRead(r Reader, key []byte) {
	if len(key) == 0 || rand.Uint32()%readSample != 0 {
		return
	}
	p := key[:len(key)-1]
	now := time.Now().Unix()
	sh := c.shardOf(p)
	sh.mu.Lock()
	if now != sh.readWindow {
		sh.readWindow = now
		clear(sh.readHeat)
	}
	load := false
	if sh.heat[string(p)] != noLoad {
		sh.readHeat[string(p)]++
		if sh.readHeat[string(p)] >= readHeatToLoad {
			delete(sh.readHeat, string(p))
			load = true
		}
	}
	sh.mu.Unlock()
	if load {
		c.load(r, slices.Clone(p))
	}
}

// errUnfit says a chunk's keys do not all have the chunk's key length, or
// are too many.
var errUnfit = errors.New("mvcc: chunk unfit to cache")

// load reads the chunk of prefix p from r into the cache.
func (c *latestCache) load(r Reader, p []byte) { c.loadWith(r, p, nil) }

// loadWith is load calling afterRead, if not nil, once it has read the
// engine and before it fills the chunk: tests commit there.
func (c *latestCache) loadWith(r Reader, p []byte, afterRead func()) {
	ch := &chunk{owner: c, prefix: p, end: kv.PrefixEnd(p)}
	ch.slots.Store(&[]*slot{})
	sh := c.shardOf(p)
	sh.mu.Lock()
	old := *sh.chunks.Load()
	if old[string(p)] != nil {
		sh.mu.Unlock()
		return
	}
	c.addLength(len(p)) // before the chunk can be found by its length
	m := make(map[string]*chunk, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[string(p)] = ch
	c.count.Add(1)
	sh.chunks.Store(&m)
	sh.mu.Unlock()

	// Committers update ch from now on; read what they committed before.
	err := ch.read(r, afterRead)
	if err == nil && ch.dead.Load() {
		return
	}
	if err != nil {
		sh.mu.Lock()
		if errors.Is(err, errUnfit) {
			sh.heat[string(p)] = noLoad
		}
		c.removeIn(sh, func(x *chunk) bool { return x == ch })
		sh.mu.Unlock()
		return
	}
	ch.complete.Store(true)
	ch.used.Store(c.tick.Add(1))
	c.loads.Add(1)
	c.evict()
}

// read fills ch with the newest Put or Delete record of each of its keys in
// r, keeping any newer record a committer has put there meanwhile. It
// merges what it read with those records into one new slice: putting the
// keys one at a time copied the slice for each, 256 times per chunk, and
// was 9% of oltp_read_write's CPU with the cache churning.
func (ch *chunk) read(r Reader, afterRead func()) error {
	lo := encodeKey(ch.prefix)
	var hi []byte
	if ch.end != nil {
		hi = encodeKey(ch.end)
	}
	recs, err := newestRecords(r, lo, hi)
	if err != nil {
		return err
	}
	if afterRead != nil {
		afterRead()
	}
	keys := make([][]byte, len(recs))
	for i, f := range recs {
		if keys[i], err = decodeKey(f.encKey); err != nil {
			return err
		}
		if len(keys[i]) != len(ch.prefix)+1 {
			return errUnfit
		}
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	old := *ch.slots.Load() // committers' records, sorted by key
	merged := make([]*slot, 0, len(old)+len(recs))
	var grown int64
	j := 0
	for i, f := range recs {
		key := keys[i]
		for j < len(old) && bytes.Compare(old[j].key, key) < 0 {
			merged = append(merged, old[j])
			j++
		}
		if j < len(old) && bytes.Equal(old[j].key, key) {
			if cur := old[j].rec.Load(); cur.commitTS < f.ts {
				old[j].rec.Store(&latestRec{commitTS: f.ts, w: f.w})
				grown += int64(len(f.w.ShortValue) - len(cur.w.ShortValue))
			}
			merged = append(merged, old[j])
			j++
			continue
		}
		sl := &slot{key: key, encKey: f.encKey}
		sl.rec.Store(&latestRec{commitTS: f.ts, w: f.w}) // newestRecords copied the value
		merged = append(merged, sl)
		grown += int64(2*len(key) + len(f.w.ShortValue) + slotOverhead)
	}
	merged = append(merged, old[j:]...)
	ch.slots.Store(&merged)
	ch.grow(grown)
	return nil
}

// found is a key's newest Put or Delete record.
type found struct {
	encKey []byte
	ts     uint64
	w      Write
}

// newestRecords reads the newest Put or Delete record of each key in the
// encoded range [lo, hi); it gives up with errUnfit past chunkMaxKeys keys.
func newestRecords(r Reader, lo, hi []byte) (recs []found, err error) {
	it, err := r.NewIter(CFWrite, lo, hi)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	var cur []byte // encKey whose record was found
	for ok := it.First(); ok; {
		encKey, ts, err := splitVersionKey(it.Key())
		if err != nil {
			return nil, err
		}
		if cur != nil && bytes.Equal(encKey, cur) {
			ok = it.SeekGE(keyEnd(cur))
			continue
		}
		w, err := decodeWrite(it.Value())
		if err != nil {
			return nil, err
		}
		if w.Kind == WritePut || w.Kind == WriteDelete {
			if len(recs) == chunkMaxKeys {
				return nil, errUnfit
			}
			cur = slices.Clone(encKey)
			w.ShortValue = slices.Clone(w.ShortValue)
			recs = append(recs, found{encKey: cur, ts: ts, w: w})
		}
		ok = it.Next()
	}
	return recs, nil
}

// evictSample is how many chunks eviction compares to choose the least
// recently read one: an approximation of LRU (Redis's) that costs the same
// however many chunks there are, where sorting them all cost a third of
// the server's CPU once loads and evictions took turns.
const evictSample = 16

// evict drops chunks read least recently, of a sample each, until the
// cache fits its limit.
func (c *latestCache) evict() {
	if c.size.Load() <= c.limit {
		return
	}
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	for c.size.Load() > c.limit {
		victim := c.leastUsed()
		if victim == nil {
			return
		}
		sh := c.shardOf(victim.prefix)
		sh.mu.Lock()
		n := c.removeIn(sh, func(x *chunk) bool { return x == victim })
		sh.mu.Unlock()
		c.evictions.Add(uint64(n))
	}
}

// leastUsed returns the complete chunk read least recently of a sample of
// evictSample (all of them if there are no more), taken a few from each
// shard from a random one on: a map's iteration starts at a random place.
func (c *latestCache) leastUsed() *chunk {
	var victim *chunk
	sampled := 0
	perShard := evictSample / 4
	if c.count.Load() <= evictSample {
		perShard = evictSample
	}
	first := rand.IntN(cacheShards)
	for i := range cacheShards {
		inShard := 0
		for _, ch := range *c.shards[(first+i)%cacheShards].chunks.Load() {
			if !ch.complete.Load() {
				continue // being loaded
			}
			if victim == nil || ch.used.Load() < victim.used.Load() {
				victim = ch
			}
			if sampled++; sampled == evictSample {
				return victim
			}
			if inShard++; inShard == perShard {
				break
			}
		}
	}
	return victim
}
