package workloads

import (
	"strings"
	"testing"
)

// TestShardStriping checks the striping rule over every total up to 300 and
// every count up to 40 (many with count > total), and a few large ones:
// the shares add up to the total, each is within one of total/count (so
// within one at every prefix of a ramp), Share grows with the total by at
// most one per item, Owns agrees with Share, and every item has exactly
// one owner.
func TestShardStriping(t *testing.T) {
	counts := []int{0, 1}
	for n := 2; n <= 40; n++ {
		counts = append(counts, n)
	}
	counts = append(counts, 97, 999, MaxShards)
	for _, n := range counts {
		shards := make([]Shard, max(n, 1))
		for i := range shards {
			shards[i] = Shard{Index: i, Count: n}
		}
		prev := make([]int, len(shards))
		owned := make([]int, len(shards))
		for total := 0; total <= 300; total++ {
			sum := 0
			for i, s := range shards {
				share := s.Share(total)
				sum += share
				// |share - total/n| < 1, in integers: |share*n - total| < n.
				if d := share*len(shards) - total; d <= -len(shards) || d >= len(shards) {
					t.Fatalf("shard %s of %d items: share %d is not within 1 of %d/%d", s, total, share, total, len(shards))
				}
				if share < prev[i] || share > prev[i]+1 {
					t.Fatalf("shard %s: Share(%d) = %d after Share(%d) = %d: not monotone by steps of at most 1", s, total, share, total-1, prev[i])
				}
				if share != owned[i] {
					t.Fatalf("shard %s: Share(%d) = %d, but it owns %d of the items 0..%d", s, total, share, owned[i], total-1)
				}
				prev[i] = share
			}
			if sum != total {
				t.Fatalf("%d shards of %d items: shares add up to %d", len(shards), total, sum)
			}
			// Item total: exactly one owner, which Next and Item agree on.
			owners := 0
			for i, s := range shards {
				if s.Owns(total) {
					owners++
					owned[i]++
					if s.Item(owned[i]-1) != total {
						t.Fatalf("shard %s: its item %d is %d, want %d", s, owned[i]-1, s.Item(owned[i]-1), total)
					}
				}
				if next := s.Next(total); !s.Owns(next) || next < total || next-total >= len(shards) {
					t.Fatalf("shard %s: Next(%d) = %d, want its first item in [%d, %d)", s, total, next, total, total+len(shards))
				}
			}
			if owners != 1 {
				t.Fatalf("%d shards: item %d has %d owners, want 1", len(shards), total, owners)
			}
		}
	}
	// A large total against the limits: shares still add up exactly.
	for _, n := range []int{7, MaxShards} {
		sum := 0
		for i := range n {
			sum += Shard{Index: i, Count: n}.Share(MaxUsers + 1)
		}
		if sum != MaxUsers+1 {
			t.Errorf("%d shards of %d: shares add up to %d", n, MaxUsers+1, sum)
		}
	}
	if (Shard{}).Owns(-1) || (Shard{Index: 1, Count: 3}).Share(-5) != 0 {
		t.Error("negative items or totals must belong to no shard")
	}
}

// TestShardWhole: the zero Shard, and 0/1, are the whole load.
func TestShardWhole(t *testing.T) {
	for _, s := range []Shard{{}, {Count: 1}} {
		if s.Sharded() || s.Share(17) != 17 || !s.Owns(5) || s.Next(5) != 5 || s.String() != "0/1" || s.Validate() != nil {
			t.Errorf("%+v: want the whole load", s)
		}
	}
}

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"0/1": {0, 1}, "1/3": {1, 3}, " 2 / 3 ": {2, 3}, "999/1000": {999, 1000}} {
		got, err := ParseShard(in)
		if err != nil || got != want {
			t.Errorf("ParseShard(%q) = %+v, %v, want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":         "want i/N",
		"3":        "want i/N",
		"a/3":      "index \"a\" of \"a/3\" is not a whole number",
		"1/b":      "number of shards \"b\" of \"1/b\" is not a whole number",
		"3/3":      "index must be between 0 and 2",
		"-1/3":     "index must be between 0 and 2",
		"0/0":      "number of shards must be between 1 and 1000",
		"0/1001":   "number of shards must be between 1 and 1000",
		"1/1":      "index must be between 0 and 0",
		"1.5/3":    "not a whole number",
		"1/3/5":    "not a whole number",
		"0/-2":     "number of shards must be between 1 and 1000",
		"10/10000": "number of shards must be between 1 and 1000",
	} {
		_, err := ParseShard(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseShard(%q): got %v, want an error containing %q", in, err, want)
		}
	}
}
