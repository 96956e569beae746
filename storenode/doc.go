// Package storenode is a Basalt storage node, `basalt store`: what TiKV is
// in a TiKV cluster. It holds regions (ranges of keys), each replicated by
// a Raft group across stores (package raftstore), serves TiKV's gRPC API
// (kvproto's tikvpb over kvrpcpb) so that the real tikv/client-go runs
// transactions on it unchanged, and reports to the placement driver.
//
//	service.go         tikvpb: region and key checks, the reads
//	service_txn.go     the transaction commands, each run by store/mvcc on
//	                   the region leader, under latches
//	service_batch.go   the BatchCommands stream client-go sends them on
//	service_errors.go  mvcc's errors as TiKV's key and region errors
//	concurrency.go     max_ts, for async commit and 1PC
//	pools.go           the read pool and the scheduler's workers: how many
//	                   reads, and commands deciding writes, run at once
//	deadlock.go        the cluster's deadlock detector, TiKV's way
//	regions.go         the seam between the service and the raftstore
//	raft_service.go    Raft messages in, and Regions over the raftstore
//	node.go            the node: Pebble, the raftstore, bootstrap, the
//	                   gRPC and status servers, shutdown
//	heartbeat.go       store and region heartbeats, PD's operators, the
//	                   split checker
//	pd.go              the store's side of pdpb
//	metrics.go         the store's counters on /metrics
//	config.go          TiKV's flag and config names
package storenode
