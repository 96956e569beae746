package tikv

import "context"

// SplitRegions implements kv.RegionSplitter with client-go's
// SplitRegions: each key's region is split there (keys that already start
// a region are skipped), without scattering the new regions; PD's
// balance schedulers place them.
func (s *Storage) SplitRegions(ctx context.Context, keys [][]byte) error {
	_, err := s.store.SplitRegions(ctx, keys, false, nil)
	return mapErr(err)
}
