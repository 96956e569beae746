package raftstore

import (
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/metapb"
)

// RegionError is a region error as TiKV returns it (NotLeader,
// EpochNotMatch, StaleCommand, ...): the request did not run and the
// client should refresh its region cache and retry.
type RegionError struct {
	Err *errorpb.Error
}

func (e *RegionError) Error() string { return "region error: " + e.Err.String() }

// NotLeader is the error for a request to region on a store that does not
// lead it; leader, if not nil, is the leader this store knows of.
func NotLeader(regionID uint64, leader *metapb.Peer) *RegionError {
	return &RegionError{Err: &errorpb.Error{Message: "not leader",
		NotLeader: &errorpb.NotLeader{RegionId: regionID, Leader: leader}}}
}
