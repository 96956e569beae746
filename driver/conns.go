package driver

import (
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/session"
)

// Connections returns the session layer's view of srv's connections:
// KILL, SHOW PROCESSLIST, the auth cache, max_connections and
// max_allowed_packet.
func Connections(srv *server.Server) session.Connections { return conns{srv} }

type conns struct{ *server.Server }

// ProcessList implements session.Connections.
func (c conns) ProcessList() []session.Process {
	ps := c.Server.ProcessList()
	out := make([]session.Process, len(ps))
	for i, p := range ps {
		out[i] = session.Process{ID: p.ID, User: p.User, Host: p.Host, DB: p.DB,
			Command: p.Command, Time: p.Time, State: p.State, Info: p.Info}
	}
	return out
}
