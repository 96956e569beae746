package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// A TiDB configuration file, such as those of TiDB's benchmark reports,
// sets keys of [performance], [prepared-plan-cache], [tikv-client] and
// [pessimistic-txn] that Basalt has no use for. Rather than refuse such a
// file, Basalt accepts these keys with TiDB's types (a value of the wrong
// type is still an error) and logs a warning that names each one; so it
// does for a key of its own that has no effect with the configured store
// (Config.Warnings). A key neither Basalt nor this list knows is an error,
// as before.

// tidbKind is the type TiDB gives a key.
type tidbKind uint8

const (
	tidbBool     tidbKind = iota
	tidbInt               // a TOML integer
	tidbFloat             // a TOML float or integer
	tidbString            // any string
	tidbDuration          // a string time.ParseDuration takes, such as "3s"
)

// tidbKeys are TiDB's keys that Basalt accepts and ignores, with their
// types (TiDB's pkg/config and client-go's config).
var tidbKeys = map[string]tidbKind{
	"performance.server-memory-quota":                   tidbInt,
	"performance.max-memory":                            tidbInt,
	"performance.stats-lease":                           tidbDuration,
	"performance.stmt-count-limit":                      tidbInt,
	"performance.pseudo-estimate-ratio":                 tidbFloat,
	"performance.bind-info-lease":                       tidbDuration,
	"performance.txn-entry-size-limit":                  tidbInt,
	"performance.txn-total-size-limit":                  tidbInt,
	"performance.tcp-keep-alive":                        tidbBool,
	"performance.tcp-no-delay":                          tidbBool,
	"performance.cross-join":                            tidbBool,
	"performance.distinct-agg-push-down":                tidbBool,
	"performance.projection-push-down":                  tidbBool,
	"performance.max-txn-ttl":                           tidbInt,
	"performance.index-usage-sync-lease":                tidbDuration,
	"performance.plan-replayer-gc-lease":                tidbDuration,
	"performance.enforce-mpp":                           tidbBool,
	"performance.stats-load-concurrency":                tidbInt,
	"performance.stats-load-queue-size":                 tidbInt,
	"performance.analyze-partition-concurrency-quota":   tidbInt,
	"performance.plan-replayer-dump-worker-concurrency": tidbInt,
	"performance.enable-stats-cache-mem-quota":          tidbBool,
	"performance.committer-concurrency":                 tidbInt,
	"performance.run-auto-analyze":                      tidbBool,
	"performance.force-priority":                        tidbString,
	"performance.memory-usage-alarm-ratio":              tidbFloat,
	"performance.enable-load-fmsketch":                  tidbBool,
	"performance.skip-init-stats":                       tidbBool,
	"performance.lite-init-stats":                       tidbBool,
	"performance.force-init-stats":                      tidbBool,
	"performance.concurrently-init-stats":               tidbBool,
	"performance.enable-async-batch-get":                tidbBool,
	"performance.feedback-probability":                  tidbFloat,
	"performance.query-feedback-limit":                  tidbInt,

	"prepared-plan-cache.memory-guard-ratio": tidbFloat,

	"pessimistic-txn.deadlock-history-capacity":             tidbInt,
	"pessimistic-txn.deadlock-history-collect-retryable":    tidbBool,
	"pessimistic-txn.pessimistic-auto-commit":               tidbBool,
	"pessimistic-txn.constraint-check-in-place-pessimistic": tidbBool,

	"tikv-client.grpc-keepalive-time":                 tidbInt,
	"tikv-client.grpc-keepalive-timeout":              tidbInt,
	"tikv-client.grpc-compression-type":               tidbString,
	"tikv-client.grpc-shared-buffer-pool":             tidbBool,
	"tikv-client.grpc-initial-window-size":            tidbInt,
	"tikv-client.grpc-initial-conn-window-size":       tidbInt,
	"tikv-client.max-concurrency-request-limit":       tidbInt,
	"tikv-client.overload-threshold":                  tidbInt,
	"tikv-client.enable-chunk-rpc":                    tidbBool,
	"tikv-client.store-limit":                         tidbInt,
	"tikv-client.store-liveness-timeout":              tidbDuration,
	"tikv-client.ttl-refreshed-txn-size":              tidbInt,
	"tikv-client.resolve-lock-lite-threshold":         tidbInt,
	"tikv-client.copr-req-timeout":                    tidbDuration,
	"tikv-client.enable-replica-selector-v2":          tidbBool,
	"tikv-client.async-commit.safe-window":            tidbDuration,
	"tikv-client.async-commit.allowed-clock-drift":    tidbDuration,
	"tikv-client.copr-cache.capacity-mb":              tidbFloat,
	"tikv-client.copr-cache.admission-max-result-mb":  tidbFloat,
	"tikv-client.copr-cache.admission-min-process-ms": tidbInt,
	"tikv-client.copr-cache.admission-max-ranges":     tidbInt,
	"tikv-client.copr-cache.enable":                   tidbBool,
}

// tidbTable reports a table that holds only keys of tidbKeys, such as
// [tikv-client.copr-cache].
func tidbTable(key string) bool {
	for k := range tidbKeys {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// checkTiDBKeys sorts out the keys the decoder left: it returns, in file
// order, the ones TiDB knows (each checked against its type; a table of
// them is passed over) and the others.
func checkTiDBKeys(name string, data []byte, md toml.MetaData, keys []toml.Key) (tidb []string, unknown []toml.Key, err error) {
	var raw map[string]any
	for _, k := range keys {
		ks := k.String()
		kind, ok := tidbKeys[ks]
		if !ok {
			if md.Type(k...) == "Hash" && tidbTable(ks) {
				continue
			}
			unknown = append(unknown, k)
			continue
		}
		if raw == nil {
			if _, err := toml.Decode(string(data), &raw); err != nil {
				return nil, nil, DecodeError(name, err)
			}
		}
		if msg := checkTiDBValue(kind, lookup(raw, k)); msg != "" {
			return nil, nil, withLine(name, keyLine(data, k), ks+": "+msg)
		}
		tidb = append(tidb, ks)
	}
	return tidb, unknown, nil
}

// checkTiDBValue returns what is wrong with v as a value of kind, or "".
func checkTiDBValue(kind tidbKind, v any) string {
	ok := false
	switch kind {
	case tidbBool:
		_, ok = v.(bool)
	case tidbInt:
		_, ok = v.(int64)
	case tidbFloat:
		switch v.(type) {
		case int64, float64:
			ok = true
		}
	case tidbString:
		_, ok = v.(string)
	case tidbDuration:
		s, isString := v.(string)
		if !isString {
			break
		}
		if _, err := time.ParseDuration(s); err != nil {
			return fmt.Sprintf("invalid duration %q", s)
		}
		ok = true
	}
	if ok {
		return ""
	}
	want := [...]string{"a boolean", "an integer", "a number", "a string", "a duration such as \"3s\""}[kind]
	return fmt.Sprintf("%v is not %s", v, want)
}

// lookup returns the value of key in a decoded file.
func lookup(raw map[string]any, key toml.Key) any {
	var v any = raw
	for _, p := range key {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// idleKeys returns the keys of Basalt's own that the file sets to other
// than their defaults and that have no effect with cfg's store: the
// embedded store's [storage] with a cluster, client-go's [tikv-client],
// the schema lease and split-table without one.
func idleKeys(md toml.MetaData, cfg *Config) []string {
	def := Default()
	var idle []string
	var walk func(prefix string, got, dflt reflect.Value)
	walk = func(prefix string, got, dflt reflect.Value) {
		for i := 0; i < got.NumField(); i++ {
			tag := got.Type().Field(i).Tag.Get("toml")
			if tag == "" || tag == "-" {
				continue
			}
			key := prefix + tag
			if got.Field(i).Kind() == reflect.Struct {
				walk(key+".", got.Field(i), dflt.Field(i))
				continue
			}
			if as := definedAs(md, key); as != "" && !got.Field(i).Equal(dflt.Field(i)) && idleKey(key, cfg.Store) {
				idle = append(idle, as)
			}
		}
	}
	walk("", reflect.ValueOf(*cfg), reflect.ValueOf(*def))
	return idle
}

// idleKey reports a key of Basalt's that has no effect with store.
func idleKey(key, store string) bool {
	switch {
	case strings.HasPrefix(key, "tikv-client."):
		return store == StoreLocal
	case key == "lease", key == "split-table":
		return store != StoreTiKV
	case strings.HasPrefix(key, "storage."), strings.HasPrefix(key, "rocksdb."):
		return store != StoreLocal
	}
	return false
}

// warnings are the lines to log about a file: its TiDB keys, which
// Basalt ignores, and its keys that have no effect with the store cfg
// uses.
func warnings(tidb []string, md toml.MetaData, cfg *Config) []string {
	var out []string
	for _, k := range tidb {
		out = append(out, fmt.Sprintf("config key %s is TiDB's and has no effect in Basalt; ignored", k))
	}
	for _, k := range idleKeys(md, cfg) {
		out = append(out, fmt.Sprintf("config key %s has no effect with store %q; ignored", k, cfg.Store))
	}
	return out
}
