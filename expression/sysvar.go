package expression

// SysVarKind is the type of a system variable's value, which is the type
// of @@name in an expression.
type SysVarKind uint8

const (
	SysVarString SysVarKind = iota // VARCHAR
	SysVarInt                      // BIGINT: integers, and booleans as 1 and 0
	SysVarUint                     // BIGINT UNSIGNED
	SysVarDouble                   // DOUBLE
)

// sysVarKind gives the kind of a system variable by its lower-case name.
// The session package, which owns the variables, registers it; until then
// every variable is a string.
var sysVarKind = func(string) SysVarKind { return SysVarString }

// RegisterSysVarKind installs the function that gives a system variable's
// kind. It is called once, from an init function, before any statement
// is built.
func RegisterSysVarKind(f func(name string) SysVarKind) { sysVarKind = f }
