package schemasync

import (
	"fmt"
	"iter"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/codec"
)

// Valid returns nil if this node may start a statement that uses the
// schema: it is registered, has loaded the schema since it registered,
// and both its registration and its schema are within the lease. Else it
// returns catalog.ErrSchemaOutdated: other nodes may have gone on without
// waiting for this one.
func (s *Syncer) Valid() error { return s.validAt(time.Now()) }

func (s *Syncer) validAt(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.lease == 0 || s.floor < 0:
		return fmt.Errorf("%w: this SQL node is not registered in PD's etcd", catalog.ErrSchemaOutdated)
	case !t.Before(s.aliveUntil):
		return fmt.Errorf("%w: the registration was not renewed in time", catalog.ErrSchemaOutdated)
	case !t.Before(s.freshUntil):
		return fmt.Errorf("%w: the schema was not reloaded in time", catalog.ErrSchemaOutdated)
	}
	return nil
}

// CheckCommit decides whether a transaction that started under schema
// version ver, and wrote keys, may commit at commitTS (0 for now). It is
// called once before the commit and again by client-go once the commit
// timestamp is known.
//
// The transaction may commit if the node's registration and schema were
// still valid at that time (else catalog.ErrSchemaOutdated: others may
// have gone on without it), and either it started after this node last
// registered (every schema change since waited for it: its pin holds this
// node's version in use down), or, TiDB's rule for the rest, no table it
// wrote changed after ver (else catalog.ErrSchemaChanged, MySQL error
// 8028, which the client retries).
func (s *Syncer) CheckCommit(ver int64, commitTS uint64, keys iter.Seq[[]byte]) error {
	t := time.Now()
	if commitTS != 0 {
		if p := time.UnixMilli(int64(commitTS >> 18)); p.After(t) {
			t = p
		}
	}
	if err := s.validAt(t); err != nil {
		return err
	}
	s.mu.Lock()
	floor := s.floor
	s.mu.Unlock()
	if ver >= floor {
		return nil
	}
	is := s.cat.InfoSchema()
	if is.Version == ver {
		return nil
	}
	seen := map[int64]bool{}
	for k := range keys {
		id, ok := tableID(k)
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		if tb := is.TableByID(id); tb == nil || tb.Revision > ver {
			return fmt.Errorf("%w: table %d changed after schema version %d", catalog.ErrSchemaChanged, id, ver)
		}
	}
	return nil
}

// tableID is the table of a row or index key (t{tableID}...).
func tableID(key []byte) (int64, bool) {
	if len(key) < 9 || key[0] != 't' {
		return 0, false
	}
	_, id, err := codec.DecodeInt(key[1:9])
	return id, err == nil
}
