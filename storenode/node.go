package storenode

import (
	"context"
	"errors"
	"log/slog"
)

// Node is a running storage node.
type Node struct {
	cfg  Config
	log  *slog.Logger
	done chan struct{}
	err  error
}

// Start opens the data directory, joins the cluster through PD (registering
// the store, bootstrapping the cluster's first region if it is new), and
// starts serving on cfg.Server.Addr (gRPC) and cfg.Server.StatusAddr
// (HTTP: /metrics, /status).
func Start(cfg Config, log *slog.Logger) (*Node, error) {
	return nil, errors.New("storenode: not built yet")
}

// Stop shuts the node down gracefully: it stops accepting requests,
// transfers the leaders it holds to other stores, flushes and closes.
func (n *Node) Stop(ctx context.Context) error { return nil }

// Done is closed when the node has stopped, after Stop or on a fatal error
// (Err says which).
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is why the node stopped on its own, once Done is closed; nil after
// Stop.
func (n *Node) Err() error { return n.err }
