package session

import "github.com/basalt-db/basalt/expression"

// sqlMode is the session's sql_mode.
func (s *Session) sqlMode() expression.SQLMode {
	v, _ := s.sysVar("sql_mode", false)
	m, _ := expression.ParseSQLMode(v.Str())
	return m
}
