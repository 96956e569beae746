// Package storenode is a Basalt storage node, `basalt store`: what TiKV is
// in a TiKV cluster. It holds regions (ranges of keys), each replicated by
// a Raft group across stores (package raftstore), serves TiKV's gRPC API
// (kvproto's tikvpb over kvrpcpb) so that the real tikv/client-go runs
// transactions on it unchanged, and reports to the placement driver.
//
//	service.go   tikvpb: the transaction commands and BatchCommands, each
//	             run by store/mvcc on the region leader, under latches
//	regions.go   the seam between the service and the raftstore
//	node.go      the node: Pebble, the raftstore, PD registration and
//	             heartbeats, the gRPC server, shutdown
//	config.go    TiKV's flag and config names
package storenode
