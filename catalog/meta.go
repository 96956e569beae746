package catalog

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tablecodec"
)

// Meta reads and writes catalog records inside one transaction. Keys:
//
//	m SchemaVersion           → uint64, bumped by every DDL
//	m NextID                  → int64, last id handed out (databases, tables, indexes)
//	m DB  {dbID}              → DBInfo (JSON)
//	m Tbl {dbID}{tableID}     → TableInfo (JSON)
//	m AutoID {tableID}        → int64, end of the last auto-increment batch
//	m Stats {tableID}         → TableStats (JSON)
//
// All sort under tablecodec.MetaPrefix, before every table's data.
type Meta struct {
	txn kv.Txn
	// version is the schema version BumpSchemaVersion set in txn, 0 before.
	version int64
}

// NewMeta returns a Meta over txn.
func NewMeta(txn kv.Txn) *Meta { return &Meta{txn: txn} }

func metaKey(parts ...any) []byte {
	k := []byte{tablecodec.MetaPrefix}
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			k = codec.EncodeBytes(k, []byte(v))
		case int64:
			k = codec.EncodeInt(k, v)
		}
	}
	return k
}

var (
	keySchemaVersion = metaKey("SchemaVersion")
	keyNextID        = metaKey("NextID")
)

func (m *Meta) getInt(key []byte) (int64, error) {
	v, err := m.txn.Get(context.Background(), key)
	if errors.Is(err, kv.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("catalog: corrupt integer at %q", key)
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func (m *Meta) setInt(key []byte, v int64) error {
	return m.txn.Set(key, binary.BigEndian.AppendUint64(nil, uint64(v)))
}

// SchemaVersion returns the stored schema version.
func (m *Meta) SchemaVersion() (int64, error) { return m.getInt(keySchemaVersion) }

// BumpSchemaVersion increments and returns the schema version.
func (m *Meta) BumpSchemaVersion() (int64, error) {
	v, err := m.getInt(keySchemaVersion)
	if err != nil {
		return 0, err
	}
	m.version = v + 1
	return v + 1, m.setInt(keySchemaVersion, v+1)
}

// NewIDs reserves n consecutive ids and returns the first.
func (m *Meta) NewIDs(n int) (int64, error) {
	v, err := m.getInt(keyNextID)
	if err != nil {
		return 0, err
	}
	return v + 1, m.setInt(keyNextID, v+int64(n))
}

func (m *Meta) putJSON(key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return m.txn.Set(key, b)
}

// PutDB writes a database record.
func (m *Meta) PutDB(db *DBInfo) error { return m.putJSON(metaKey("DB", db.ID), db) }

// DeleteDB deletes a database record.
func (m *Meta) DeleteDB(id int64) error { return m.txn.Delete(metaKey("DB", id)) }

// PutTable writes a table record, stamping it with the schema version
// this transaction publishes (t must be a new record, not a published one).
func (m *Meta) PutTable(t *TableInfo) error {
	if m.version != 0 {
		t.Revision = m.version
	}
	return m.putJSON(metaKey("Tbl", t.DBID, t.ID), t)
}

// DeleteTable deletes a table record and its auto-increment counter.
func (m *Meta) DeleteTable(dbID, tableID int64) error {
	if err := m.txn.Delete(metaKey("AutoID", tableID)); err != nil {
		return err
	}
	if err := m.txn.Delete(metaKey("Stats", tableID)); err != nil {
		return err
	}
	return m.txn.Delete(metaKey("Tbl", dbID, tableID))
}

// DeleteTableRecord deletes a table's record alone (a table moving to
// another database keeps its counters and statistics).
func (m *Meta) DeleteTableRecord(dbID, tableID int64) error {
	return m.txn.Delete(metaKey("Tbl", dbID, tableID))
}

// AutoID returns the end of a table's last auto-increment batch.
func (m *Meta) AutoID(tableID int64) (int64, error) { return m.getInt(metaKey("AutoID", tableID)) }

// SetAutoID records the end of a table's auto-increment batch.
func (m *Meta) SetAutoID(tableID, v int64) error { return m.setInt(metaKey("AutoID", tableID), v) }

// PutStats writes a table's statistics.
func (m *Meta) PutStats(tableID int64, st *TableStats) error {
	return m.putJSON(metaKey("Stats", tableID), st)
}

// Stats reads a table's statistics, or nil.
func (m *Meta) Stats(tableID int64) (*TableStats, error) {
	v, err := m.txn.Get(context.Background(), metaKey("Stats", tableID))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st TableStats
	return &st, json.Unmarshal(v, &st)
}

// scanJSON decodes every record under prefix.
func scanJSON[T any](txn kv.Txn, prefix []byte) ([]*T, error) {
	it, err := txn.Iter(prefix, kv.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []*T
	for it.Valid() {
		v := new(T)
		if err := json.Unmarshal(it.Value(), v); err != nil {
			return nil, fmt.Errorf("catalog: corrupt record %q: %w", it.Key(), err)
		}
		out = append(out, v)
		if err := it.Next(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DBs lists every database.
func (m *Meta) DBs() ([]*DBInfo, error) {
	return scanJSON[DBInfo](m.txn, metaKey("DB"))
}

// Tables lists every table of a database.
func (m *Meta) Tables(dbID int64) ([]*TableInfo, error) {
	ts, err := scanJSON[TableInfo](m.txn, metaKey("Tbl", dbID))
	for _, t := range ts {
		upgradeCollations(t)
	}
	return ts, err
}

// TableStats are what ANALYZE TABLE records for the planner.
type TableStats struct {
	RowCount int64 `json:"row_count"`
	// IndexNDV maps an index id to its number of distinct keys.
	IndexNDV map[int64]int64 `json:"index_ndv"`
	// ColumnNDV maps a column id to its number of distinct values.
	ColumnNDV map[int64]int64 `json:"column_ndv"`
	// Version is the timestamp of the ANALYZE.
	Version uint64 `json:"version"`
	// Columns and Indexes hold histograms, NDV and NULL counts, by column
	// id and index id (stats.go).
	Columns map[int64]*ColumnStats `json:"columns,omitempty"`
	Indexes map[int64]*ColumnStats `json:"indexes,omitempty"`
	// Sampled is how many rows the column statistics were built from.
	Sampled int64 `json:"sampled,omitempty"`
}
