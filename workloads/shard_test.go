package workloads

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
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

// within1 reports whether part is within one of total/n: |part*n - total| < n.
func within1(part, total, n int) bool {
	d := part*n - total
	return d > -n && d < n
}

// TestShardClosedUsers: over random phases (1 to 6 groups of 1 to 40 users,
// 2 to 12 shards, many with more shards than a group has users), every user
// has exactly one shard, and each shard runs within one of every group's
// users and of all users, and, at every instant of the ramp, within one of
// each group's users started so far.
func TestShardClosedUsers(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	for trial := range 3000 {
		groups := make([]UserGroup, 1+r.IntN(6))
		for g := range groups {
			groups[g].Users = 1 + r.IntN(40)
		}
		n := 2 + r.IntN(11)
		order := startOrder(groups)
		owner := make([]int, len(order))
		for k := range owner {
			owner[k] = -1
		}
		for i := range n {
			for _, k := range (Shard{Index: i, Count: n}).closedUsers(groups, order) {
				if owner[k] >= 0 {
					t.Fatalf("trial %d %v, %d shards: user %d run by shards %d and %d", trial, groups, n, k, owner[k], i)
				}
				owner[k] = i
			}
		}
		total := make([]int, n)
		perGroup := make([][]int, len(groups))
		for g := range perGroup {
			perGroup[g] = make([]int, n)
		}
		started := make([]int, len(groups))
		for k, slot := range order {
			if owner[k] < 0 {
				t.Fatalf("trial %d %v, %d shards: user %d is run by no shard", trial, groups, n, k)
			}
			total[owner[k]]++
			perGroup[slot.group][owner[k]]++
			started[slot.group]++
			for i := range n {
				if !within1(perGroup[slot.group][i], started[slot.group], n) {
					t.Fatalf("trial %d %v, %d shards: after user %d shard %d runs %d of group %d's %d started users",
						trial, groups, n, k, i, perGroup[slot.group][i], slot.group, started[slot.group])
				}
			}
		}
		for i := range n {
			if !within1(total[i], len(order), n) {
				t.Fatalf("trial %d %v, %d shards: shard %d runs %d of %d users", trial, groups, n, i, total[i], len(order))
			}
		}
	}
}

// TestShardRampUsers: for 1 to 8 groups and 1 to 12 shards, along 2,000
// users of a ramp, every user has exactly one shard and, after every user
// added, each shard runs within one of all users so far and within one of
// every group's.
func TestShardRampUsers(t *testing.T) {
	for groups := 1; groups <= 8; groups++ {
		for n := 1; n <= 12; n++ {
			t.Run(fmt.Sprintf("%d groups %d shards", groups, n), func(t *testing.T) {
				total := make([]int, n)
				perGroup := make([][]int, groups)
				for g := range perGroup {
					perGroup[g] = make([]int, n)
				}
				for k := range 2000 {
					owners := 0
					for i := range n {
						if (Shard{Index: i, Count: n}).ownsRampUser(k, groups) {
							owners++
							total[i]++
							perGroup[k%groups][i]++
						}
					}
					if owners != 1 {
						t.Fatalf("user %d has %d shards, want 1", k, owners)
					}
					for i := range n {
						if !within1(total[i], k+1, n) {
							t.Fatalf("after user %d shard %d runs %d users, not within 1 of %d/%d", k, i, total[i], k+1, n)
						}
						if g := k % groups; !within1(perGroup[g][i], k/groups+1, n) {
							t.Fatalf("after user %d shard %d runs %d of group %d's %d users", k, i, perGroup[g][i], g, k/groups+1)
						}
					}
				}
			})
		}
	}
}

// TestPhaseValidateShard: a spec's shard is checked like --shard, and an
// open phase needs a request slot per shard.
func TestPhaseValidateShard(t *testing.T) {
	p := testPhase(UserGroup{Operation: RESTGet, Users: 2, Iterations: 1})
	for sh, want := range map[Shard]string{
		{Index: 3, Count: 3}:    "shard.index: the shard index must be between 0 and 2",
		{Index: 0, Count: -1}:   "shard.count: the number of shards must be between 1 and 1000",
		{Index: 1}:              "shard.index: the shard index must be between 0 and 0",
		{Index: 0, Count: 1001}: "shard.count",
	} {
		p.Shard = sh
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("shard %+v: got %v, want an error containing %q", sh, err, want)
		}
	}
	p.Shard = Shard{Index: 2, Count: 3}
	if err := p.Validate(); err != nil {
		t.Errorf("shard 2/3 of a closed phase with 2 users: %v", err)
	}
	p.Model, p.Duration, p.Rate, p.MaxInFlight = Open, time.Second, 10, 2
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "max_in_flight: 2 request slots cannot be shared by 3 shards") {
		t.Errorf("open, 2 slots, 3 shards: got %v", err)
	}
	p.MaxInFlight = 3
	if err := p.Validate(); err != nil || p.Connections() != 1 {
		t.Errorf("open, 3 slots, 3 shards: %v, %d connections; want valid, 1", err, p.Connections())
	}
}
