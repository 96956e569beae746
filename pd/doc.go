// Package pd is Basalt's placement driver (basalt pd): the timestamp
// oracle and the directory of stores and regions of a cluster, serving
// TiKV's PD protocol (kvproto's pdpb over gRPC) so that the real
// pd/client and client-go, and TiKV-style storage nodes, talk to it.
//
// Its state and its leader election stand on embedded etcd, as TiDB's PD
// does: every member runs an etcd member (server.go), the pdpb service is
// registered on etcd's gRPC server so that etcd's client API and pdpb
// share the client URL, and the members campaign for leadership through
// an etcd election (leader.go). Only the leader answers pdpb requests;
// the others answer "not leader", on which pd/client asks GetMembers
// again and follows the new leader.
//
// The leader hands out timestamps (tso.go) and IDs (id.go) from windows
// it saves in etcd before using them, so that a new leader starts above
// anything an old one handed out. The cluster's metadata, stores and
// regions (cluster.go) are kept in etcd too, so that a new leader answers
// at once. It schedules (schedule.go) by answering region heartbeats
// with operators, and makes the operators it is asked for (admin.go:
// splits, scatters, leader transfers). grpc.go is the pdpb service, gc.go the safe points,
// metastorage.go the meta storage reads, http.go the HTTP API,
// metrics.go the Prometheus metrics.
//
// Keys in etcd, under the cluster's root /pd/{cluster id}:
//
//	/pd/cluster_id             the cluster ID, created by the first member
//	{root}/leader              the election (etcd's concurrency.Election)
//	{root}/timestamp           the TSO window's end, physical ms (8 bytes)
//	{root}/alloc_id            the ID allocator's end (8 bytes)
//	{root}/raft                metapb.Cluster, written by Bootstrap
//	{root}/raft/s/{id}         metapb.Store
//	{root}/raft/r/{id}         metapb.Region
//	{root}/gc/safe_point       the GC safe point (gc.go)
//	{root}/config              [schedule] and [replication] changed at run
//	                           time (runtime_config.go)
//
// A member's data dir also records the member and cluster it belongs to
// (datadir.go).
package pd
