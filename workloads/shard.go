package workloads

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxShards caps Shard.Count: a thousand drivers is far beyond any target
// soakd would soak, and keeps every shard's arithmetic trivially in range.
const MaxShards = 1000

// Shard is one of Count drivers that together offer a phase's load: the
// execution segment [Index/Count, (Index+1)/Count) of it, in k6's terms. The
// zero value, and any Count <= 1, is the whole load.
//
// The segments are striped, not cut into blocks: item k of any of the
// phase's global sequences (arrival k of the open schedule, request slot k,
// subscription client k; users by the rules of closedUsers and
// ownsRampUser, which stripe them group by group) belongs to shard k mod
// Count. Striping
// is what makes every prefix fair: of the first t items shard i owns
// ceil((t-i)/Count) (0 when t <= i), which differs from t/Count by less than
// one, for every t. So a ramp (users started one after another, arrivals at
// a rising rate) is shared evenly at every instant, not only once it is
// over, and the shares of any total add up to exactly that total. Contiguous
// blocks would give shard 0 the whole start of a ramp and the last shard its
// whole end.
//
// Every shard computes the same global sequences from the same spec and
// seed and runs only the items it owns, keeping their global index (seed,
// ramp slot, writer id), so item k behaves the same whichever shard runs it
// and the shards together send what one driver would.
type Shard struct {
	// Index is this shard's number, from 0 to Count-1.
	Index int `json:"index"`
	// Count is the number of shards; 0 or 1 is one driver offering the whole load.
	Count int `json:"count"`
}

// ParseShard parses "i/N": shard i of N, with 0 <= i < N and 1 <= N <= MaxShards.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("want i/N, this shard's index and the number of shards, such as 0/3 for the first of 3 (got %q)", s)
	}
	i, err := strconv.Atoi(strings.TrimSpace(is))
	if err != nil {
		return Shard{}, fmt.Errorf("the shard index %q of %q is not a whole number (want i/N, such as 0/3)", is, s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(ns))
	if err != nil {
		return Shard{}, fmt.Errorf("the number of shards %q of %q is not a whole number (want i/N, such as 0/3)", ns, s)
	}
	if n < 1 {
		return Shard{}, fmt.Errorf("%q: the number of shards must be between 1 and %d, got %d", s, MaxShards, n)
	}
	sh := Shard{Index: i, Count: n}
	if err := sh.Validate(); err != nil {
		return Shard{}, fmt.Errorf("%q: %w", s, err)
	}
	return sh, nil
}

// Validate reports whether s is a shard: Count between 1 and MaxShards (or
// 0, the whole load) and Index between 0 and Count-1 (0 for the whole load).
func (s Shard) Validate() error {
	var errs []error
	if s.Count < 0 || s.Count > MaxShards {
		errs = append(errs, fmt.Errorf("count: the number of shards must be between 1 and %d, got %d", MaxShards, s.Count))
	}
	if hi := max(s.Count, 1) - 1; s.Index < 0 || s.Index > hi {
		errs = append(errs, fmt.Errorf("index: the shard index must be between 0 and %d (count - 1; 0 is the first shard), got %d", hi, s.Index))
	}
	return errors.Join(errs...)
}

// String returns s as "i/N" ("0/1" for the whole load).
func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.count()) }

// Sharded reports whether s is a part of the load rather than all of it.
func (s Shard) Sharded() bool { return s.Count > 1 }

// count returns the number of shards, at least 1.
func (s Shard) count() int { return max(s.Count, 1) }

// Owns reports whether item k of a global sequence belongs to s: k mod
// Count is its Index. Negative items belong to no shard.
func (s Shard) Owns(k int) bool {
	return k >= 0 && k%s.count() == s.Index
}

// Share returns how many of the items 0..total-1 s owns: ceil((total-Index)/Count),
// never negative. The shares of all Count shards add up to total, and each
// is within one of total/Count.
func (s Shard) Share(total int) int {
	if total <= s.Index {
		return 0
	}
	n := s.count()
	return (total - s.Index + n - 1) / n
}

// Next returns the first item at or after k that s owns.
func (s Shard) Next(k int) int {
	k = max(k, 0)
	n := s.count()
	return k + ((s.Index-k%n)+n)%n
}

// Item returns the global index of s's j-th item (j from 0): Index + j*Count.
func (s Shard) Item(j int) int { return s.Index + j*s.count() }

// Users are not striped in start order (user k of startOrder to shard k
// mod Count) but with the phase's groups in mind. Start order is a round
// robin of the groups, and striping it deals the users out like cards: with
// as many groups as shards (or a multiple), every user of a group lands on
// the same shard, one shard running all the readers and another all the
// writers. Each model's rule below keeps every shard within one of every
// group's users, as well as of all users.

// closedUsers returns the global indices (positions in order, the phase's
// startOrder over groups) of the closed-model users s runs, in start order.
// The users are striped listed group by group: member m of group g is item
// offset(g)+m, offset(g) being the users of the groups before g. So a shard
// runs within one of every group's users and within one of all users, and
// of the users started at any instant of the ramp it runs within one per
// group (so, at worst, within the number of groups in all).
func (s Shard) closedUsers(groups []UserGroup, order []userSlot) []int {
	offset := make([]int, len(groups))
	for g := 1; g < len(groups); g++ {
		offset[g] = offset[g-1] + max(groups[g-1].Users, 0)
	}
	var out []int
	for k, slot := range order {
		if s.Owns(offset[slot.group] + slot.member) {
			out = append(out, k)
		}
	}
	return out
}

// ownsRampUser reports whether s runs user k of a ramping phase of groups
// groups, whose user k is member k/groups of group k%groups and whose end
// is not known in advance: user k is shard (k + k/L) mod Count's, L being
// the least common multiple of groups and Count. Every aligned run of Count
// users is then a rotation of the shards, so of the first t users each
// shard runs within one of t/Count; and the rotation advancing by one every
// L users walks each group's members through every shard in turn (in each
// run of L users a group's L/groups members cover the shards of one class
// mod gcd(groups, Count) once each, and successive runs take the classes in
// turn), so each shard runs within one of every group's share too, at every
// step of the ramp.
func (s Shard) ownsRampUser(k, groups int) bool {
	n := s.count()
	l := max(groups, 1) / gcd(max(groups, 1), n) * n
	return k >= 0 && (k+k/l)%n == s.Index
}

// gcd returns the greatest common divisor of a and b, both above 0.
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
