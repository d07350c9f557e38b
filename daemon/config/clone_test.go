package config

import (
	"fmt"
	"reflect"
	"testing"
)

// filledConfig returns a Config with every field set by reflection: every
// scalar non-zero, every pointer set, every map holding one entry and every
// slice two elements, down to the leaves. It is deterministic, so two calls
// return deeply equal configs that share nothing.
func filledConfig(t *testing.T) *Config {
	t.Helper()
	c := &Config{}
	n := 0
	fill(t, reflect.ValueOf(c).Elem(), "Config", &n)
	return c
}

// fill sets v (addressable) and everything below it; n numbers the leaves
// so that no two leaves hold the same value.
func fill(t *testing.T, v reflect.Value, path string, n *int) {
	t.Helper()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		*n++
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		*n++
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		*n++
		v.SetFloat(float64(*n) + 0.5)
	case reflect.String:
		*n++
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), path, n)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k := reflect.New(v.Type().Key()).Elem()
		fill(t, k, path+"[key]", n)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(t, e, path+"[value]", n)
		v.SetMapIndex(k, e)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range v.Len() {
			fill(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i), n)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i), n)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				t.Fatalf("%s.%s is unexported: this test cannot fill it, nor prove Clone copies it", path, f.Name)
			}
			fill(t, v.Field(i), path+"."+f.Name, n)
		}
	case reflect.Interface:
		// A value decoded from YAML (a body, GraphQL variables): a mapping
		// holding a list holding a string, every reference kind it may hold.
		*n += 2
		v.Set(reflect.ValueOf(map[string]any{fmt.Sprintf("s%d", *n-1): []any{fmt.Sprintf("s%d", *n)}}))
	default:
		t.Fatalf("%s is a %s: Clone cannot deep-copy that kind; handle it in Clone and in this test", path, v.Kind())
	}
}

// mutateAny changes every string in a decoded YAML value in place (maps
// and lists are changed, not replaced, so an alias shows) and returns it.
func mutateAny(x any) any {
	switch x := x.(type) {
	case map[string]any:
		for k, v := range x {
			x[k] = mutateAny(v)
		}
		x["new key"] = "new value"
		return x
	case []any:
		for i, v := range x {
			x[i] = mutateAny(v)
		}
		return x
	case string:
		return x + "-mutated"
	}
	return x
}

// mutate changes every leaf reachable from v (addressable) in place,
// through every pointer, map and slice, and adds an entry to every map: if
// any of them were shared with another config, that config would change.
func mutate(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1000)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(v.Uint() + 1000)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1000)
	case reflect.String:
		v.SetString(v.String() + "-mutated")
	case reflect.Pointer:
		if !v.IsNil() {
			mutate(t, v.Elem(), path)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			mutate(t, e, fmt.Sprintf("%s[%v]", path, k))
			v.SetMapIndex(k, e)
		}
		k := reflect.New(v.Type().Key()).Elem()
		n := 1 << 20
		fill(t, k, path+"[new key]", &n)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(t, e, path+"[new value]", &n)
		v.SetMapIndex(k, e)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			mutate(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			mutate(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Interface:
		if !v.IsNil() {
			v.Set(reflect.ValueOf(mutateAny(v.Interface())))
		}
	default:
		t.Fatalf("%s is a %s: cannot mutate it", path, v.Kind())
	}
}

// assertNoAliasing walks orig and clone side by side and reports every
// pointer, map and slice of clone that points at orig's memory. It also
// reports a nil pointer, nil map or empty slice in orig: the walk proves
// nothing below one, so the input must be fully populated.
func assertNoAliasing(t *testing.T, orig, clone reflect.Value, path string) {
	t.Helper()
	switch orig.Kind() {
	case reflect.Pointer:
		if orig.IsNil() || clone.IsNil() {
			t.Errorf("%s: nil pointer (original nil: %v, clone nil: %v); want both set", path, orig.IsNil(), clone.IsNil())
			return
		}
		if orig.Pointer() == clone.Pointer() {
			t.Errorf("%s: the clone's pointer aliases the original's", path)
		}
		assertNoAliasing(t, orig.Elem(), clone.Elem(), "*"+path)
	case reflect.Map:
		if orig.Len() == 0 || clone.Len() == 0 {
			t.Errorf("%s: empty map (original %d entries, clone %d); want both populated", path, orig.Len(), clone.Len())
			return
		}
		if orig.Pointer() == clone.Pointer() {
			t.Errorf("%s: the clone's map aliases the original's", path)
		}
		for _, k := range orig.MapKeys() {
			ce := clone.MapIndex(k)
			if !ce.IsValid() {
				t.Errorf("%s[%v]: missing from the clone", path, k)
				continue
			}
			assertNoAliasing(t, orig.MapIndex(k), ce, fmt.Sprintf("%s[%v]", path, k))
		}
	case reflect.Slice:
		if orig.Len() == 0 || clone.Len() != orig.Len() {
			t.Errorf("%s: slice lengths %d (original) and %d (clone); want equal and non-zero", path, orig.Len(), clone.Len())
			return
		}
		if orig.Pointer() == clone.Pointer() {
			t.Errorf("%s: the clone's slice shares the original's backing array", path)
		}
		for i := range orig.Len() {
			assertNoAliasing(t, orig.Index(i), clone.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Array:
		for i := range orig.Len() {
			assertNoAliasing(t, orig.Index(i), clone.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Struct:
		for i := range orig.NumField() {
			assertNoAliasing(t, orig.Field(i), clone.Field(i), path+"."+orig.Type().Field(i).Name)
		}
	case reflect.Interface:
		if orig.IsNil() || clone.IsNil() {
			t.Errorf("%s: nil interface (original nil: %v, clone nil: %v); want both set", path, orig.IsNil(), clone.IsNil())
			return
		}
		assertNoAliasing(t, orig.Elem(), clone.Elem(), path)
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		t.Errorf("%s is a %s: Clone cannot deep-copy that kind; handle it in Clone and in this test", path, orig.Kind())
	}
}

// TestCloneSharesNothing fills every field of a Config (every pointer set,
// every map and slice non-empty, to the leaves) and checks by reflection
// that its clone is deeply equal and that no pointer, map or slice of the
// clone points into the original. A field added to Config with a reference
// kind that Clone does not copy makes this test fail.
func TestCloneSharesNothing(t *testing.T) {
	orig := filledConfig(t)
	clone := orig.Clone()
	if !reflect.DeepEqual(orig, clone) {
		t.Fatalf("the clone differs from the original:\n%+v\n%+v", orig, clone)
	}
	assertNoAliasing(t, reflect.ValueOf(orig), reflect.ValueOf(clone), "Config")
}

// TestCloneMutationLeavesOriginal mutates every leaf of a clone through
// every pointer, map and slice (and adds an entry to every map), then checks
// that the original still equals an independently built twin; and the same
// the other way round, mutating the original and checking the clone.
func TestCloneMutationLeavesOriginal(t *testing.T) {
	orig, twin := filledConfig(t), filledConfig(t)
	clone := orig.Clone()
	mutate(t, reflect.ValueOf(clone).Elem(), "Config")
	if reflect.DeepEqual(clone, twin) {
		t.Fatal("mutate changed nothing: the test proves nothing")
	}
	if !reflect.DeepEqual(orig, twin) {
		t.Errorf("mutating the clone changed the original:\n got %+v\nwant %+v", orig, twin)
	}

	orig2 := filledConfig(t)
	clone2 := orig2.Clone()
	mutate(t, reflect.ValueOf(orig2).Elem(), "Config")
	if !reflect.DeepEqual(clone2, twin) {
		t.Errorf("mutating the original changed the clone:\n got %+v\nwant %+v", clone2, twin)
	}
}

// TestCloneLoadedConfig clones the embedded defaults with the optional KPI
// limits set: equal to the original, sharing none of its limits, profiles,
// phases or user groups. Clone of nil is nil.
func TestCloneLoadedConfig(t *testing.T) {
	cfg, err := Load(defaults(t), []byte("kpis:\n  cpu_per_request_increase_percent: 50\n  alloc_per_request_increase_percent: 60\n  gc_pause_p99_increase_percent: 70\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clone := cfg.Clone()
	if !reflect.DeepEqual(cfg, clone) {
		t.Fatal("the clone of the loaded config differs from it")
	}
	*clone.KPIs.CPUPerRequestIncreasePercent = 999
	*clone.KPIs.AllocPerRequestIncreasePercent = 999
	*clone.KPIs.GCPauseP99IncreasePercent = 999
	for name, p := range clone.Profiles {
		for i := range p.Phases {
			p.Phases[i].Name += "-mutated"
			for j := range p.Phases[i].Users {
				p.Phases[i].Users[j].Iterations += 1000
			}
		}
		p.Description += "-mutated"
		clone.Profiles[name] = p
	}
	clone.Profiles["added"] = Profile{}
	fresh, err := Load(defaults(t), []byte("kpis:\n  cpu_per_request_increase_percent: 50\n  alloc_per_request_increase_percent: 60\n  gc_pause_p99_increase_percent: 70\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, fresh) {
		t.Error("mutating the clone of the loaded config changed it")
	}
	if (*Config)(nil).Clone() != nil {
		t.Error("Clone of nil is not nil")
	}
}
