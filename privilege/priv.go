// Package privilege is Basalt's access control, as pure logic: the
// privileges MySQL knows, account and grant records as the mysql schema's
// tables hold them, matching a client (user, host) to its account, the
// privileges an account has on a database or table, password verifiers,
// and the text of SHOW GRANTS. It reads no storage: the session layer loads
// the records from mysql.user, mysql.db and mysql.tables_priv into a Cache
// and asks it.
//
//	priv.go      the privilege bits, their names and the levels they apply at
//	match.go     host and database patterns ('%', '_') and their order
//	cache.go     records, the Cache, account matching and privilege checks
//	grants.go    SHOW GRANTS
//	password.go  mysql_native_password and caching_sha2_password verifiers
package privilege

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Priv is a set of privileges.
type Priv uint64

// MySQL's static privileges, in the order SHOW GRANTS lists them.
const (
	Select Priv = 1 << iota
	Insert
	Update
	Delete
	Create
	Drop
	Reload
	Shutdown
	Process
	File
	References
	Index
	Alter
	ShowDB
	Super
	CreateTmpTable
	LockTables
	Execute
	ReplSlave
	ReplClient
	CreateView
	ShowView
	CreateRoutine
	AlterRoutine
	CreateUser
	Event
	Trigger
	CreateTablespace
	CreateRole
	DropRole
	// Grant is WITH GRANT OPTION: the holder may grant the privileges it
	// has at the same level.
	Grant
	numPrivs = iota
)

// privInfo names one privilege: in GRANT and SHOW GRANTS, as the column
// of mysql.user and mysql.db, and as a member of tables_priv.Table_priv.
type privInfo struct {
	sql    string // "SELECT", "SHOW DATABASES"
	column string // "Select_priv"; "" if mysql.user has none
	set    string // "Select"; "" if not a table privilege
}

var privInfos = [numPrivs]privInfo{
	{"SELECT", "Select_priv", "Select"},
	{"INSERT", "Insert_priv", "Insert"},
	{"UPDATE", "Update_priv", "Update"},
	{"DELETE", "Delete_priv", "Delete"},
	{"CREATE", "Create_priv", "Create"},
	{"DROP", "Drop_priv", "Drop"},
	{"RELOAD", "Reload_priv", ""},
	{"SHUTDOWN", "Shutdown_priv", ""},
	{"PROCESS", "Process_priv", ""},
	{"FILE", "File_priv", ""},
	{"REFERENCES", "References_priv", "References"},
	{"INDEX", "Index_priv", "Index"},
	{"ALTER", "Alter_priv", "Alter"},
	{"SHOW DATABASES", "Show_db_priv", ""},
	{"SUPER", "Super_priv", ""},
	{"CREATE TEMPORARY TABLES", "Create_tmp_table_priv", ""},
	{"LOCK TABLES", "Lock_tables_priv", ""},
	{"EXECUTE", "Execute_priv", ""},
	{"REPLICATION SLAVE", "Repl_slave_priv", ""},
	{"REPLICATION CLIENT", "Repl_client_priv", ""},
	{"CREATE VIEW", "Create_view_priv", "Create View"},
	{"SHOW VIEW", "Show_view_priv", "Show view"},
	{"CREATE ROUTINE", "Create_routine_priv", ""},
	{"ALTER ROUTINE", "Alter_routine_priv", ""},
	{"CREATE USER", "Create_user_priv", ""},
	{"EVENT", "Event_priv", ""},
	{"TRIGGER", "Trigger_priv", "Trigger"},
	{"CREATE TABLESPACE", "Create_tablespace_priv", ""},
	{"CREATE ROLE", "Create_role_priv", ""},
	{"DROP ROLE", "Drop_role_priv", ""},
	{"GRANT OPTION", "Grant_priv", "Grant"},
}

// Level is where a grant applies.
type Level uint8

const (
	Global Level = iota // ON *.*
	DB                  // ON db.*
	Table               // ON db.t
)

// Privileges that each level can hold (MySQL's GLOBAL_ACLS, DB_ACLS,
// TABLE_ACLS).
const (
	GlobalPrivs Priv = 1<<numPrivs - 1
	DBPrivs     Priv = Select | Insert | Update | Delete | Create | Drop | Grant | References | Index | Alter |
		CreateTmpTable | LockTables | Execute | CreateView | ShowView | CreateRoutine | AlterRoutine | Event | Trigger
	TablePrivs Priv = Select | Insert | Update | Delete | Create | Drop | Grant | References | Index | Alter |
		CreateView | ShowView | Trigger
)

// LevelPrivs returns the privileges a grant at level l can hold.
func LevelPrivs(l Level) Priv {
	switch l {
	case DB:
		return DBPrivs
	case Table:
		return TablePrivs
	}
	return GlobalPrivs
}

// All is what ALL [PRIVILEGES] means at level l: everything but GRANT OPTION.
func All(l Level) Priv { return LevelPrivs(l) &^ Grant }

// Each calls f with each privilege of p, in SHOW GRANTS order.
func (p Priv) Each(f func(Priv)) {
	for i := 0; i < numPrivs; i++ {
		if b := Priv(1) << i; p&b != 0 {
			f(b)
		}
	}
}

// String is p as a GRANT lists it: "SELECT, INSERT"; "USAGE" when empty.
func (p Priv) String() string {
	if p == 0 {
		return "USAGE"
	}
	var names []string
	p.Each(func(b Priv) { names = append(names, b.info().sql) })
	return strings.Join(names, ", ")
}

func (p Priv) info() privInfo {
	for i := 0; i < numPrivs; i++ {
		if p == Priv(1)<<i {
			return privInfos[i]
		}
	}
	return privInfo{}
}

// Column is the mysql.user / mysql.db column of a single privilege.
func (p Priv) Column() string { return p.info().column }

// SetString is p as tables_priv.Table_priv holds it: "Select,Insert".
func (p Priv) SetString() string {
	var names []string
	(p & TablePrivs).Each(func(b Priv) { names = append(names, b.info().set) })
	return strings.Join(names, ",")
}

// ParseSet parses tables_priv.Table_priv; unknown members are ignored.
func ParseSet(s string) Priv {
	var p Priv
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		for i := 0; i < numPrivs; i++ {
			if privInfos[i].set != "" && strings.EqualFold(privInfos[i].set, m) {
				p |= Priv(1) << i
			}
		}
	}
	return p
}

// fromParser maps the parser's privilege types to Priv.
var fromParser = map[mysql.PrivilegeType]Priv{
	mysql.SelectPriv:            Select,
	mysql.InsertPriv:            Insert,
	mysql.UpdatePriv:            Update,
	mysql.DeletePriv:            Delete,
	mysql.CreatePriv:            Create,
	mysql.DropPriv:              Drop,
	mysql.ReloadPriv:            Reload,
	mysql.ShutdownPriv:          Shutdown,
	mysql.ProcessPriv:           Process,
	mysql.FilePriv:              File,
	mysql.ReferencesPriv:        References,
	mysql.IndexPriv:             Index,
	mysql.AlterPriv:             Alter,
	mysql.ShowDBPriv:            ShowDB,
	mysql.SuperPriv:             Super,
	mysql.CreateTMPTablePriv:    CreateTmpTable,
	mysql.LockTablesPriv:        LockTables,
	mysql.ExecutePriv:           Execute,
	mysql.ReplicationSlavePriv:  ReplSlave,
	mysql.ReplicationClientPriv: ReplClient,
	mysql.CreateViewPriv:        CreateView,
	mysql.ShowViewPriv:          ShowView,
	mysql.CreateRoutinePriv:     CreateRoutine,
	mysql.AlterRoutinePriv:      AlterRoutine,
	mysql.CreateUserPriv:        CreateUser,
	mysql.EventPriv:             Event,
	mysql.TriggerPriv:           Trigger,
	mysql.CreateTablespacePriv:  CreateTablespace,
	mysql.CreateRolePriv:        CreateRole,
	mysql.DropRolePriv:          DropRole,
	mysql.GrantPriv:             Grant,
	mysql.UsagePriv:             0,
}

// FromParser converts a privilege named in GRANT or REVOKE at level l.
// ok is false for a privilege Basalt does not know (a dynamic one such as
// SYSTEM_VARIABLES_ADMIN).
func FromParser(t mysql.PrivilegeType, l Level) (p Priv, ok bool) {
	if t == mysql.AllPriv {
		return All(l), true
	}
	p, ok = fromParser[t]
	return p, ok
}

// UserColumns are the privileges of mysql.user, in its column order.
var UserColumns = []Priv{Select, Insert, Update, Delete, Create, Drop, Reload, Shutdown, Process, File, Grant,
	References, Index, Alter, ShowDB, Super, CreateTmpTable, LockTables, Execute, ReplSlave, ReplClient,
	CreateView, ShowView, CreateRoutine, AlterRoutine, CreateUser, Event, Trigger, CreateTablespace,
	CreateRole, DropRole}

// DBColumns are the privileges of mysql.db, in its column order.
var DBColumns = []Priv{Select, Insert, Update, Delete, Create, Drop, Grant, References, Index, Alter,
	CreateTmpTable, LockTables, CreateView, ShowView, CreateRoutine, AlterRoutine, Execute, Event, Trigger}
