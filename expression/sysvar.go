package expression

import "github.com/basalt-db/basalt/errno"

// SysVarKind is the type of a system variable's value, which is the type
// of @@name in an expression.
type SysVarKind uint8

const (
	SysVarString SysVarKind = iota // VARCHAR
	SysVarInt                      // BIGINT: integers, and booleans as 1 and 0
	SysVarUint                     // BIGINT UNSIGNED
	SysVarDouble                   // DOUBLE
)

// SysVarInfo is what building @@name needs to know of a variable.
type SysVarInfo struct {
	Kind SysVarKind
	// GlobalOnly variables (read-only ones too) have no @@session value;
	// SessionOnly ones no @@global value.
	GlobalOnly, SessionOnly bool
}

// sysVarInfo describes a system variable by its lower-case name. The
// session package, which owns the variables, registers it; until then
// every variable is a string of both scopes.
var sysVarInfo = func(string) SysVarInfo { return SysVarInfo{} }

// RegisterSysVarInfo installs the function that describes a system
// variable. It is called once, from an init function, before any
// statement is built.
func RegisterSysVarInfo(f func(name string) SysVarInfo) { sysVarInfo = f }

// checkSysVarScope refuses @@session.name of a global variable and
// @@global.name of a session one, as MySQL does (1238).
func checkSysVarScope(name string, info SysVarInfo, explicit, global bool) error {
	switch {
	case explicit && !global && info.GlobalOnly:
		return errno.New(1238, "Variable '%s' is a GLOBAL variable", name)
	case global && info.SessionOnly:
		return errno.New(1238, "Variable '%s' is a SESSION variable", name)
	}
	return nil
}
