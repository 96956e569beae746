package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Keys Basalt named its own way before taking TiKV's names for them. A
// file may still set a key by its old name, but not by both names.
var renamedKeys = []struct {
	old, key string
	field    func(*Config) *ByteSize
}{
	{"storage.block-cache-size", "storage.block-cache.capacity",
		func(c *Config) *ByteSize { return &c.Storage.BlockCache.Capacity }},
	{"storage.memtable-size", "rocksdb.defaultcf.write-buffer-size",
		func(c *Config) *ByteSize { return &c.RocksDB.DefaultCF.WriteBufferSize }},
}

// applyRenamed sets cfg's fields from the old names among the keys the
// decoder left, and returns the keys left after them.
func applyRenamed(name string, data []byte, md toml.MetaData, keys []toml.Key, cfg *Config) ([]toml.Key, error) {
	var raw map[string]any
	var rest []toml.Key
next:
	for _, k := range keys {
		for _, r := range renamedKeys {
			if k.String() != r.old {
				continue
			}
			line := keyLine(data, k)
			if md.IsDefined(strings.Split(r.key, ".")...) {
				return nil, withLine(name, line, fmt.Sprintf("%s and %s are the same setting (%s is its older name): keep one", r.old, r.key, r.old))
			}
			if raw == nil {
				if _, err := toml.Decode(string(data), &raw); err != nil {
					return nil, DecodeError(name, err)
				}
			}
			if err := r.field(cfg).UnmarshalTOML(lookup(raw, k)); err != nil {
				return nil, withLine(name, line, r.old+": "+err.Error())
			}
			continue next
		}
		rest = append(rest, k)
	}
	return rest, nil
}

// renamedFrom returns the old name of key, or "".
func renamedFrom(key string) string {
	for _, r := range renamedKeys {
		if r.key == key {
			return r.old
		}
	}
	return ""
}

// definedAs returns the name under which md sets key, its own or its old
// one, or "" if md sets it under neither.
func definedAs(md toml.MetaData, key string) string {
	if md.IsDefined(strings.Split(key, ".")...) {
		return key
	}
	if old := renamedFrom(key); old != "" && md.IsDefined(strings.Split(old, ".")...) {
		return old
	}
	return ""
}
