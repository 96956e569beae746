package errno

// Codes of the protocol layer: connection limits, the handshake, packets
// and commands (server/), and the errors every SQL layer returns at that
// edge.
const (
	ErConCount                 = 1040 // ER_CON_COUNT_ERROR
	ErHandshake                = 1043 // ER_HANDSHAKE_ERROR
	ErDBAccessDenied           = 1044 // ER_DBACCESS_DENIED_ERROR
	ErAccessDenied             = 1045 // ER_ACCESS_DENIED_ERROR
	ErUnknownCom               = 1047 // ER_UNKNOWN_COM_ERROR
	ErEmptyQuery               = 1065 // ER_EMPTY_QUERY
	ErKillDenied               = 1095 // ER_KILL_DENIED_ERROR
	ErNetPacketTooLarge        = 1153 // ER_NET_PACKET_TOO_LARGE
	ErNetPacketsOutOfOrder     = 1156 // ER_NET_PACKETS_OUT_OF_ORDER
	ErNotSupportedAuthMode     = 1251 // ER_NOT_SUPPORTED_AUTH_MODE
	ErPSManyParam              = 1390 // ER_PS_MANY_PARAM
	ErPluginIsNotLoaded        = 1524 // ER_PLUGIN_IS_NOT_LOADED
	ErMalformedPacket          = 1835 // ER_MALFORMED_PACKET
	ErQueryTimeout             = 3024 // ER_QUERY_TIMEOUT
	ErSecureTransportRequired  = 3159 // ER_SECURE_TRANSPORT_REQUIRED
	ErClientInteractionTimeout = 4031 // ER_CLIENT_INTERACTION_TIMEOUT
)

func init() {
	for code, st := range map[uint16]string{
		ErConCount:             "08004",
		ErHandshake:            "08S01",
		ErDBAccessDenied:       "42000",
		ErAccessDenied:         "28000",
		ErNoDB:                 "3D000",
		ErUnknownCom:           "08S01",
		ErBadDB:                "42000",
		ErParse:                "42000",
		ErEmptyQuery:           "42000",
		ErNetPacketTooLarge:    "08S01",
		ErNetPacketsOutOfOrder: "08S01",
		ErNotSupportedAuthMode: "08004",
		ErQueryInterrupted:     "70100",
	} {
		states[code] = st
	}
}

// AccessDenied is MySQL's answer to a wrong user or password (1045).
func AccessDenied(user, host string, usingPassword bool) *Error {
	yes := "NO"
	if usingPassword {
		yes = "YES"
	}
	return New(ErAccessDenied, "Access denied for user '%s'@'%s' (using password: %s)", user, host, yes)
}

// BadDB is MySQL's answer to a database that does not exist (1049).
func BadDB(db string) *Error { return New(ErBadDB, "Unknown database '%s'", db) }

// NoSuchThread is MySQL's answer to KILL of an unknown connection id (1094).
func NoSuchThread(id uint32) *Error { return New(ErNoSuchThread, "Unknown thread id: %d", id) }

// QueryInterrupted is what a statement cancelled by KILL QUERY returns
// (1317).
func QueryInterrupted() *Error { return New(ErQueryInterrupted, "Query execution was interrupted") }
