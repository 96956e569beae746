package expression

import (
	"strings"

	"github.com/basalt-db/basalt/errno"
)

// SQLMode is a set of sql_mode flags.
type SQLMode uint32

// The sql_mode flags Basalt knows. Those that change behaviour here:
// the strict modes, NO_ZERO_DATE, NO_ZERO_IN_DATE,
// ERROR_FOR_DIVISION_BY_ZERO, NO_UNSIGNED_SUBTRACTION,
// PAD_CHAR_TO_FULL_LENGTH is accepted only.
const (
	ModeRealAsFloat SQLMode = 1 << iota
	ModePipesAsConcat
	ModeANSIQuotes
	ModeIgnoreSpace
	ModeOnlyFullGroupBy
	ModeNoUnsignedSubtraction
	ModeNoDirInCreate
	ModeNoKeyOptions
	ModeNoTableOptions
	ModeNoFieldOptions
	ModeNoAutoValueOnZero
	ModeNoBackslashEscapes
	ModeStrictTransTables
	ModeStrictAllTables
	ModeNoZeroInDate
	ModeNoZeroDate
	ModeAllowInvalidDates
	ModeErrorForDivisionByZero
	ModeHighNotPrecedence
	ModeNoEngineSubstitution
	ModePadCharToFullLength
	ModeTimeTruncateFractional
	ModeNoAutoCreateUser
	ModeEmptyStringIsNull
	ModeSimultaneousAssignment
)

// modeNames are the flags' names, in MySQL's order (SELECT @@sql_mode
// lists them so).
var modeNames = []struct {
	name string
	mode SQLMode
}{
	{"REAL_AS_FLOAT", ModeRealAsFloat}, {"PIPES_AS_CONCAT", ModePipesAsConcat}, {"ANSI_QUOTES", ModeANSIQuotes},
	{"IGNORE_SPACE", ModeIgnoreSpace}, {"ONLY_FULL_GROUP_BY", ModeOnlyFullGroupBy},
	{"NO_UNSIGNED_SUBTRACTION", ModeNoUnsignedSubtraction}, {"NO_DIR_IN_CREATE", ModeNoDirInCreate},
	{"NO_KEY_OPTIONS", ModeNoKeyOptions}, {"NO_TABLE_OPTIONS", ModeNoTableOptions}, {"NO_FIELD_OPTIONS", ModeNoFieldOptions},
	{"NO_AUTO_VALUE_ON_ZERO", ModeNoAutoValueOnZero}, {"NO_BACKSLASH_ESCAPES", ModeNoBackslashEscapes},
	{"STRICT_TRANS_TABLES", ModeStrictTransTables}, {"STRICT_ALL_TABLES", ModeStrictAllTables},
	{"NO_ZERO_IN_DATE", ModeNoZeroInDate}, {"NO_ZERO_DATE", ModeNoZeroDate}, {"ALLOW_INVALID_DATES", ModeAllowInvalidDates},
	{"ERROR_FOR_DIVISION_BY_ZERO", ModeErrorForDivisionByZero}, {"NO_AUTO_CREATE_USER", ModeNoAutoCreateUser},
	{"HIGH_NOT_PRECEDENCE", ModeHighNotPrecedence}, {"NO_ENGINE_SUBSTITUTION", ModeNoEngineSubstitution},
	{"PAD_CHAR_TO_FULL_LENGTH", ModePadCharToFullLength}, {"EMPTY_STRING_IS_NULL", ModeEmptyStringIsNull},
	{"SIMULTANEOUS_ASSIGNMENT", ModeSimultaneousAssignment}, {"TIME_TRUNCATE_FRACTIONAL", ModeTimeTruncateFractional},
}

// combinedModes are names that stand for several flags.
var combinedModes = map[string]string{
	"ANSI":        "REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ONLY_FULL_GROUP_BY",
	"TRADITIONAL": "STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION",
	"DB2":         "PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,NO_KEY_OPTIONS,NO_TABLE_OPTIONS,NO_FIELD_OPTIONS",
	"MSSQL":       "PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,NO_KEY_OPTIONS,NO_TABLE_OPTIONS,NO_FIELD_OPTIONS",
	"ORACLE":      "PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,NO_KEY_OPTIONS,NO_TABLE_OPTIONS,NO_FIELD_OPTIONS",
	"POSTGRESQL":  "PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,NO_KEY_OPTIONS,NO_TABLE_OPTIONS,NO_FIELD_OPTIONS",
	"MYSQL323":    "",
	"MYSQL40":     "",
	"MAXDB":       "PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,NO_KEY_OPTIONS,NO_TABLE_OPTIONS,NO_FIELD_OPTIONS",
}

// ParseSQLMode reads a sql_mode value: comma-separated names, case
// insensitive, combination modes expanded. It fails with MySQL's 1231 on
// an unknown name.
func ParseSQLMode(s string) (SQLMode, error) {
	var m SQLMode
	for _, part := range strings.Split(s, ",") {
		name := strings.ToUpper(strings.TrimSpace(part))
		if name == "" {
			continue
		}
		if exp, ok := combinedModes[name]; ok {
			sub, _ := ParseSQLMode(exp)
			m |= sub
			continue
		}
		found := false
		for _, n := range modeNames {
			if n.name == name {
				m |= n.mode
				found = true
				break
			}
		}
		if !found {
			return 0, errno.New(errno.ErWrongValueForVar, "Variable 'sql_mode' can't be set to the value of '%s'", strings.TrimSpace(part))
		}
	}
	return m, nil
}

// String lists the flags as @@sql_mode shows them.
func (m SQLMode) String() string {
	var parts []string
	for _, n := range modeNames {
		if m&n.mode != 0 {
			parts = append(parts, n.name)
		}
	}
	return strings.Join(parts, ",")
}

// Strict reports a strict mode.
func (m SQLMode) Strict() bool { return m&(ModeStrictTransTables|ModeStrictAllTables) != 0 }
