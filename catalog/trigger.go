package catalog

import "strings"

// TriggerInfo is a row trigger: a body of statements run for each row an
// INSERT, UPDATE or DELETE of its table changes, before or after the
// change. A stored TriggerInfo is never modified (DDL replaces it).
type TriggerInfo struct {
	Name   string `json:"name"`
	Timing string `json:"timing"` // "BEFORE" or "AFTER"
	Event  string `json:"event"`  // "INSERT", "UPDATE" or "DELETE"
	// Body is the action's text as written: one statement, or BEGIN ...
	// END around several.
	Body string `json:"body"`
	// Definer is 'user'@'host', as SHOW TRIGGERS shows it.
	Definer string `json:"definer"`
	// Created is when CREATE TRIGGER ran, in Unix microseconds.
	Created int64 `json:"created"`
	// SQLMode is the sql_mode the trigger was created (and runs) under.
	SQLMode string `json:"sql_mode"`
}

// Fires reports whether the trigger runs at timing for event.
func (tr *TriggerInfo) Fires(timing, event string) bool {
	return tr.Timing == timing && tr.Event == event
}

// TriggersFor returns the table's triggers for timing and event in the
// order they fire (nil when it has none, the common case).
func (t *TableInfo) TriggersFor(timing, event string) []*TriggerInfo {
	var out []*TriggerInfo
	for _, tr := range t.Triggers {
		if tr.Fires(timing, event) {
			out = append(out, tr)
		}
	}
	return out
}

// FindTrigger returns the trigger named name (case-insensitively) of any
// table of database db, and that table; nil if there is none. Trigger
// names are unique within a database.
func (is *InfoSchema) FindTrigger(db, name string) (*TableInfo, *TriggerInfo) {
	for _, t := range is.Tables(db) {
		for _, tr := range t.Triggers {
			if strings.EqualFold(tr.Name, name) {
				return t, tr
			}
		}
	}
	return nil, nil
}

// Trigger timings and events, as TriggerInfo holds them.
const (
	Before   = "BEFORE"
	After    = "AFTER"
	OnInsert = "INSERT"
	OnUpdate = "UPDATE"
	OnDelete = "DELETE"
)
